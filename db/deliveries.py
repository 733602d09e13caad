"""Deliveries through their lifecycle: claim, record an attempt, release, recover.

Every state change is one guarded statement: it names the state it leaves in its WHERE
clause, and a worker changes a delivery only while it holds the claim token it was given.
Each claim, record, release and recovery also settles the configs' health rows (in-flight
count, circuit breaker) in its own transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from db import configs, health
from db.errors import NotEligible, NotFound, Raced
from db.filters import DeliveryFilter
from db.health import HealthRules, Settled, Transition
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.scope import PLATFORM, Scope
from db.sql import QUERIES
from db.vocabulary import REPLAYABLE, AttemptOutcome, HeldBy, ReplayAction, Status, Verdict

CLAIM_TRIES = 3  # runs of a claim that keeps racing other workers for the same slots


@dataclass(frozen=True)
class Claimed:
    """A delivery this worker holds, with the event and the config as they are now."""

    id: int
    event_id: str
    event_type: str
    payload: str
    occurred_at: datetime
    config_id: str
    config_active: bool
    endpoint: str
    secret: str = field(repr=False)
    previous_secrets: list[str] = field(repr=False)  # unexpired rotated-out ones, newest first
    attempt_count: int
    replay_generation: int
    generation_started_at: datetime
    last_backoff: float | None  # seconds, the backoff chosen after the previous attempt
    claimed_at: datetime
    webhook_id: str  # the `webhook-id` of its requests: unique beyond this database
    trace_parent: str | None  # the producer's W3C trace context, which each attempt continues
    trace_state: str | None
    token: uuid.UUID
    probe: bool = False  # the one attempt that tests an open circuit
    max_in_flight: int | None = None  # the config's own cap, if it has one (all workers)
    rate_per_second: float | None = None  # the config's rate, if it has one (all workers)
    source: str = "api"  # where the event came from: api, kafka or backfill
    message_key: bytes | None = field(default=None, repr=False)  # a Kafka message's key
    config_version: int = 0  # the config's version when it was claimed (config_versions)
    ordering_key: str | None = None  # of an ordered config's delivery: its key
    sequence: int | None = None  # and its place, 1, 2, 3… per config and key
    deprecated: bool = False  # its event's type is deprecated in the catalog
    tenant_id: int = 0  # its config's tenant: a worker's sends take turns by tenant


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt did, and the state its delivery should move to."""

    delivery_id: int
    token: uuid.UUID
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: AttemptOutcome
    status_code: int
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    next_status: Status
    next_delay: float | None
    last_error: str | None
    next_backoff: float | None = None  # the policy's delay within next_delay, kept for jitter
    verdict: Verdict = Verdict.NEUTRAL  # what the attempt says of the endpoint, for the breaker
    sent_at: datetime | None = None  # when the request went out, on the database's clock
    # The headers the request carried, but those every request carries alike (None: unknown)
    request_headers: Mapping[str, str] | None = None
    # It failed for good because its generation's budget (attempts or time) ran out: announced
    # to the operational tenant as `delivery.exhausted`
    exhausted: bool = False


@dataclass(frozen=True)
class Moved:
    """A delivery that changed state, its new state, and the claim that moved it (if any)."""

    id: int
    status: Status
    next_attempt_at: datetime | None = None
    token: uuid.UUID | None = None


def _moved(row: dict[str, Any], **given: Any) -> Moved:
    """Return the Moved of a statement's row (id, status and perhaps next_attempt_at)."""
    return as_type(Moved, row, status=Status(row["status"]), **given)


# For callers that do not pass a worker's rules (tools, tests): the default cap, no breaker.
DEFAULT_RULES = HealthRules(failures_to_open=health.NEVER, min_volume=health.NEVER)


def claim_due(pool: ConnectionPool, *, owner: str, limit: int,
              rules: HealthRules = DEFAULT_RULES, capacity: int = 50, hold: int = 3,
              rooms: Mapping[str, int] | None = None) -> list[Claimed]:
    """Claim up to `limit` due deliveries for `owner`, fairly across configs and within their
    caps; they are `delivering` on return. A claim of an open circuit is its probe.

    Of each config it takes no more than the worker's room: `rooms` gives it for the configs
    the worker holds (0 or less: none); for the others it is `hold` times the worker's share of
    the config (its maxInFlight up to `capacity`, the worker's sends at once, or `rules.cap`).

    A claim that raced another worker's for a config's last slots (or its probe) is run
    again, at most CLAIM_TRIES times; after that this cycle claims nothing.
    """
    rooms = rooms or {}
    params = {"limit": limit, "owner": owner, "cap": rules.cap, "ramp": rules.ramp,
              "rate_burst": health.RATE_BURST, "capacity": capacity, "hold": hold,
              "room_ids": list(rooms), "rooms": list(rooms.values())}
    for _ in range(CLAIM_TRIES):
        token = uuid.uuid4()
        try:
            with pool.statement() as cursor:
                cursor.execute_prepared("claim_due_deliveries", {**params, "token": str(token)},
                                        flush_later=True)
                rows = as_dicts(cursor)
                if rows:  # sent only once the claim is on disk
                    cursor.wait_for_flush()
        except Raced:
            continue
        return [as_type(Claimed, row, token=token) for row in rows]
    return []


def config_versions(pool: ConnectionPool, config_ids: Collection[str]) -> dict[str, int]:
    """Return the version of each of `config_ids` now: counted up by every change after which
    nothing claimed of the config before may be sent."""
    return dict(pool.execute("config_versions", {"ids": list(config_ids)}))


def record_and_settle(pool: ConnectionPool, results: Sequence[AttemptResult],
                      rules: HealthRules = DEFAULT_RULES, *, gone: Collection[str] = ()
                      ) -> tuple[list[Moved], list[Transition]]:
    """Record the attempts and, in the same statement, free the slots of the claims that
    moved and feed their verdicts to the circuit breaker; return the moves and the circuit
    transitions. A late result of a recovered claim moves nothing and settles nothing.
    `gone`: the configs deactivated for answering 410 among the results of this record,
    whose final failures stay failed (see `record_and_deactivate`)."""
    if not results:
        return [], []
    with pool.statement() as cursor:
        cursor.execute_prepared("record_and_settle", _record_params(results, rules, gone=gone),
                                flush_later=True)
        cursor.wait_for_flush()  # recorded only once on disk
        return _recorded(as_dicts(cursor))


def record_and_deactivate(pool: ConnectionPool, results: Sequence[AttemptResult],
                          rules: HealthRules, *, configs_touched: Collection[str],
                          deactivate: Collection[str], gone: Collection[str], reason: str
                          ) -> tuple[list[Moved], list[Transition], dict[str, int]]:
    """Record the attempts as `record_and_settle` does and, in the same transaction,
    deactivate the configs `deactivate` (an answer among `results` said their endpoint is
    gone for good): the answer and the deactivation it causes are committed together or not
    at all. A result of a `gone` config (`deactivate`, and those of the same 410 recorded in
    another part of a batch) that failed for good stays failed; its other results are
    cancelled with its pending deliveries. Return also, for each config deactivated now, how
    many pending deliveries it cancelled (one found inactive or deleted is left out).
    `configs_touched`: the configs of all of `results`.

    Its locks are taken first, in the one lock order (`configs.lock_for_change`): the
    configs, the pending deliveries, the health rows. Unlike `record_and_settle` this holds
    the health rows until its commit: a 410 is rare."""
    deactivated: dict[str, int] = {}
    with pool.transaction() as cursor:
        health.act_as(cursor, None, reason)
        configs.lock_for_change(cursor, PLATFORM, [*configs_touched, *deactivate],
                                pending_of=deactivate)
        for config_id in sorted(deactivate):
            try:
                change = configs.deactivate_in(cursor, PLATFORM, config_id)
            except NotFound:
                continue  # deleted meanwhile: inactive already
            if change.changed:
                deactivated[config_id] = change.cancelled
        cursor.execute_prepared("record_and_settle",
                                _record_params(results, rules, gone={*gone, *deactivate}))
        moved, transitions = _recorded(as_dicts(cursor))
        for config_id in deactivated:
            health.note_reason(cursor, config_id, reason)
    return moved, transitions, deactivated


def _record_params(results: Sequence[AttemptResult], rules: HealthRules, *,
                   gone: Collection[str] = ()) -> dict[str, Any]:
    return {
        "ids": [r.delivery_id for r in results],
        "tokens": [str(r.token) for r in results],
        "attempt_numbers": [r.attempt_number for r in results],
        "generations": [r.replay_generation for r in results],
        "endpoints": [r.endpoint for r in results],
        "outcomes": [r.outcome for r in results],
        "status_codes": [r.status_code for r in results],
        "durations_ms": [r.duration_ms for r in results],
        "excerpts": [r.response_excerpt for r in results],
        "errors": [r.error for r in results],
        "next_statuses": [r.next_status for r in results],
        "next_delays": [r.next_delay for r in results],
        "last_errors": [r.last_error for r in results],
        "next_backoffs": [r.next_backoff for r in results],
        "verdicts": [r.verdict for r in results],
        "sent_at": [r.sent_at for r in results],
        "request_headers": [None if r.request_headers is None
                            else json.dumps(r.request_headers, separators=(",", ":"))
                            for r in results],
        "exhausted": [r.exhausted for r in results],
        "gone": list(gone),
        **rules.params(),
    }


def _recorded(rows: list[dict[str, Any]]) -> tuple[list[Moved], list[Transition]]:
    moved = [_moved(row, token=uuid.UUID(str(row["claim_token"])))
             for row in rows if row["kind"] == "moved"]
    return moved, health.transitions([row for row in rows if row["kind"] == "settled"])


@dataclass(frozen=True)
class HandedBack:
    """Claims handed back without an attempt: the deliveries moved, and the circuits that
    changed with them (a handed-back probe re-opens its circuit)."""

    moved: list[Moved]
    transitions: list[Transition]


def release(pool: ConnectionPool, claims: Sequence[tuple[int, uuid.UUID]],
            rules: HealthRules = DEFAULT_RULES) -> HandedBack:
    """Hand claims back without an attempt: pending again in their place in the due order,
    or cancelled if the config is off. Their slots are freed; a handed-back probe leaves its
    circuit open, probing again now."""
    if not claims:
        return HandedBack([], [])
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["release_claims"],
            {"ids": [id for id, _ in claims], "tokens": [str(token) for _, token in claims]},
        )
        return _settle_handed_back(cursor, as_dicts(cursor), rules)


def recover_stale(pool: ConnectionPool, *, timeout: float, limit: int,
                  rules: HealthRules = DEFAULT_RULES) -> HandedBack:
    """Return up to `limit` claims older than `timeout` seconds to the queue (or cancel them),
    freeing their slots."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["recover_stale_claims"], {"timeout": float(timeout), "limit": limit})
        return _settle_handed_back(cursor, as_dicts(cursor), rules)


def _settle_handed_back(cursor: Any, rows: list[dict[str, Any]],
                        rules: HealthRules) -> HandedBack:
    """Settle the health of the configs whose claims `rows` handed back (same transaction)."""
    moved = [_moved(row, token=uuid.UUID(str(row["claim_token"]))) for row in rows]
    transitions = health.settle(cursor, [Settled(m.id, m.token, Verdict.NONE) for m in moved],
                                rules)
    return HandedBack(moved, transitions)


def seconds_until_next_due(pool: ConnectionPool, rules: HealthRules = DEFAULT_RULES,
                           saturated: Collection[str] = ()) -> float | None:
    """Return the seconds until a claim could take something (of configs not in
    `saturated`), or None if nothing waits."""
    return pool.execute("seconds_until_next_due", {"cap": rules.cap, "ramp": rules.ramp,
                                                   "saturated": sorted(saturated)})[0][0]


@dataclass(frozen=True)
class Replay:
    """What a replay did: `REPLAYED` (new generation) or `EXPEDITED` (due now)."""

    delivery_id: int
    action: ReplayAction
    replay_generation: int
    next_attempt_at: datetime


# Why a delivery is not replayed: the same words one at a time and in bulk.
INACTIVE_CONFIG = "its config is inactive or deleted"


def held(by: HeldBy, *, until: datetime | None = None, behind: int | None = None) -> str:
    """Say why making a held pending delivery due would change nothing, and what would."""
    if by == HeldBy.PAUSE:
        return "it is held by its config's pause; resume the config to send it"
    if by == HeldBy.CIRCUIT:
        when = f" until the next probe at {until.isoformat()}" if until else ""
        return (f"it is held by its config's circuit{when}; reset the circuit to send it "
                "now")
    earlier = f" (delivery {behind})" if behind is not None else ""
    return (f"it waits for an earlier delivery of its ordering key{earlier}; it is sent once "
            "that one's outcome is settled")


def not_replayable(status: str) -> str:
    """Say why a delivery in `status` (neither failed nor pending) cannot be replayed."""
    return f"it is {status}; only failed and pending deliveries can be replayed"


def replay(cursor: Any, scope: Scope, delivery_id: int) -> Replay:
    """Replay a failed delivery or expedite a pending one, within the caller's transaction.

    Raises NotFound for an unknown delivery and NotEligible (saying why) for any other state,
    or when its config is inactive or deleted.
    """
    cursor.execute(QUERIES["lock_key_turns_of_deliveries"],
                   {**scope.params(), "ids": [delivery_id]})
    cursor.execute(QUERIES["replay_delivery"], {**scope.params(), "id": delivery_id})
    row = as_dict(cursor)
    if row is not None:
        return as_type(Replay, {**row, "action": ReplayAction(row["action"])})
    cursor.execute(QUERIES["replay_blocker"], {**scope.params(), "id": delivery_id})
    blocker = as_dict(cursor)
    if blocker is None:
        raise NotFound(f"delivery {delivery_id} not found")
    status = blocker["status"]
    if status in REPLAYABLE and not blocker["config_active"]:
        raise NotEligible(f"delivery {delivery_id}: {INACTIVE_CONFIG}")
    if blocker["held_by"] is not None:
        raise NotEligible(f"delivery {delivery_id}: " + held(
            HeldBy(blocker["held_by"]), until=blocker["held_until"],
            behind=blocker["held_behind"]))
    raise NotEligible(f"delivery {delivery_id}: {not_replayable(status)}")


@dataclass(frozen=True)
class ReplayPage:
    """What a bulk replay did to one page: ids replayed, expedited, and skipped with why."""

    replayed: list[int]
    expedited: list[int]
    skipped: list[tuple[int, str]]
    has_more: bool
    last: tuple[datetime, int] | None  # (created_at, id) where the next page starts below


def replay_page(
    cursor: Any, scope: Scope, filter: DeliveryFilter, *, before: tuple[datetime, int] | None,
    limit: int,
) -> ReplayPage:
    """Replay or expedite one page (newest first, below `before`) of what `filter` matches.

    `before` is the (created_at, id) where the previous page ended. Runs within the caller's
    transaction: the page is listed, then the failed and pending deliveries among it whose
    config is active change in one guarded statement.
    """
    moment, id = before or (None, None)
    cursor.execute(QUERIES["list_deliveries_newest"], {
        **scope.params(), **filter.params(), "cursor_id": id, "cursor_time": moment,
        "limit": limit + 1})
    listed = [(row["created_at"], row["id"]) for row in as_dicts(cursor)]
    page, has_more = [id for _, id in listed[:limit]], len(listed) > limit
    if not page:
        return ReplayPage([], [], [], has_more=False, last=None)
    cursor.execute(QUERIES["lock_key_turns_of_deliveries"], {**scope.params(), "ids": page})
    cursor.execute(QUERIES["replay_listed_deliveries"], {**scope.params(), "ids": page})
    replayed, expedited, skipped = [], [], []
    for row in as_dicts(cursor):
        id, action, status = row["id"], row["action"], row["status"]
        if action == ReplayAction.REPLAYED:
            replayed.append(id)
        elif action == ReplayAction.EXPEDITED:
            expedited.append(id)
        elif status not in REPLAYABLE:
            skipped.append((id, not_replayable(status)))
        elif not row["config_active"]:
            skipped.append((id, INACTIVE_CONFIG))
        elif row["held_by"] is not None:
            skipped.append((id, held(HeldBy(row["held_by"]), until=row["held_until"],
                                     behind=row["held_behind"])))
        else:
            skipped.append((id, "it changed state during the replay"))
    return ReplayPage(replayed, expedited, skipped, has_more=has_more, last=listed[:limit][-1])

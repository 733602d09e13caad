"""Read-only views for operators: delivery listings and counts, one delivery with its attempts,
stats, and attempt counts over time for charts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from db.counting import Count, combine, worth_counting
from db.filters import DeliveryFilter
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.scope import Scope
from db.sql import QUERIES
from db.vocabulary import IN_HAND, AttemptOutcome, HeldBy, Status

COUNT_CAP = 1_000_000  # the queue depth stops here
EXACT_UP_TO = 10_000  # deliveries of one status counted exactly; more are estimated
LARGE = 100_000  # a terminal status estimated this big is not counted at all


@dataclass(frozen=True)
class Hold:
    """What holds a pending delivery back, since and until when (None: until it changes)."""

    by: HeldBy
    since: datetime | None
    until: datetime | None
    reason: str | None  # the pause's reason, the circuit's last failure
    behind: int | None  # the earlier delivery of its key it waits for

    @classmethod
    def pop_from(cls, row: dict[str, Any]) -> Hold | None:
        """Take the hold's columns out of a delivery's row; None when nothing holds it."""
        by, since, until, reason, behind = (row.pop(f"held_{name}", None) for name in
                                            ("by", "since", "until", "reason", "behind"))
        return None if by is None else cls(HeldBy(by), since, until, reason, behind)


@dataclass(frozen=True)
class DeliverySummary:
    id: int
    webhook_id: str  # a delivery made before webhook ids were keys: its number, as it was sent
    event_id: str
    event_type: str
    config_id: str
    status: Status
    attempt_count: int
    replay_generation: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    config_name: str | None
    ordering_key: str | None = None
    hold: Hold | None = None
    tenant_id: int | None = None  # whose delivery it is


@dataclass(frozen=True)
class DeliveryDetail(DeliverySummary):
    """A delivery with its event's payload (decoded JSON), the time the event occurred, and
    what a broker message carried beside it (key, W3C trace context)."""

    payload: Any = None
    payload_text: str = ""  # the payload as stored, as the worker splices it into the body
    occurred_at: datetime | None = None
    message_key: bytes | None = None
    trace_parent: str | None = None
    trace_state: str | None = None


@dataclass(frozen=True)
class Attempt:
    id: int
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: AttemptOutcome
    status_code: int
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    created_at: datetime
    request_headers: dict[str, str] | None  # None for attempts recorded before it was kept


@dataclass(frozen=True)
class Stats:
    by_status: dict[Status, Count]
    queue_depth: int
    oldest_due_age_seconds: float | None


class Order(Enum):
    """How a delivery listing is sorted, and the statements that walk it each way."""

    NEWEST = ("list_deliveries_newest", "list_deliveries_oldest")
    DUE_SOONEST = ("list_deliveries_due_soonest", "list_deliveries_due_latest")


def deliveries(
    pool: ConnectionPool,
    scope: Scope,
    filter: DeliveryFilter,
    *,
    limit: int,
    order: Order = Order.NEWEST,
    cursor: tuple[datetime, int] | None = None,
    backwards: bool = False,
) -> list[DeliverySummary]:
    """Return up to `limit` deliveries `filter` matches, in `order` after `cursor`.

    `cursor` is the (time, id) position of the last row seen: its creation time for NEWEST,
    its next attempt time for DUE_SOONEST. `backwards` walks the other way from `cursor` and
    returns the rows nearest to it first.
    """
    moment, id = cursor if cursor else (None, None)
    params = {**scope.params(), **filter.params(), "limit": limit, "cursor_id": id,
              "cursor_time": moment}
    with pool.transaction() as db:
        db.execute(QUERIES[order.value[backwards]], params)
        return [_summary(row) for row in as_dicts(db)]


def _summary(row: dict[str, Any]) -> DeliverySummary:
    hold = Hold.pop_from(row)
    return DeliverySummary(**{**row, "status": Status(row["status"]), "hold": hold})


def count(pool: ConnectionPool, scope: Scope, filter: DeliveryFilter, *,
          bound: int) -> tuple[int, bool]:
    """Return how many deliveries `filter` matches and whether that is exact.

    Up to `bound` the count is exact; past it, the planner's estimate (never below
    `bound + 1`) is returned, so that the cost stays bounded on any table size.
    """
    params = {**scope.params(), **filter.params(), "bound": bound}
    with pool.transaction() as db:
        db.execute(QUERIES["count_deliveries"], params)
        (exact,) = db.fetchone()
        if exact <= bound:
            return exact, True
        db.execute(QUERIES["estimate_deliveries"], params)
        (plan,) = db.fetchone()  # EXPLAIN's JSON, decoded by psycopg2
    return max(int(plan[0]["Plan"]["Plan Rows"]), bound + 1), False


def delivery(pool: ConnectionPool, scope: Scope, id: int) -> DeliveryDetail | None:
    """Return one delivery with its payload, or None if there is none with that id that
    `scope` may see."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_delivery"], {**scope.params(), "id": id})
        row = as_dict(cursor)
    if row is None:
        return None
    key = row["message_key"]
    hold = Hold.pop_from(row)
    return DeliveryDetail(**{**row, "status": Status(row["status"]), "hold": hold,
                             "payload": json.loads(row["payload"]),
                             "payload_text": row["payload"],
                             "message_key": None if key is None else bytes(key)})


def attempts(pool: ConnectionPool, scope: Scope, delivery_id: int, *,
             last: int) -> list[Attempt]:
    """Return the newest `last` attempts of a delivery `scope` may see, oldest first."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["attempts_of_delivery"],
                       {**scope.params(), "id": delivery_id, "last": last})
        return [Attempt(**row) for row in reversed(as_dicts(cursor))]


def stats(pool: ConnectionPool, *, exact_up_to: int = EXACT_UP_TO, large: int = LARGE) -> Stats:
    """Return the count of each status, the queue depth and the age of the oldest due delivery.

    Each status is counted exactly up to `exact_up_to` rows; beyond that, and for a terminal
    status estimated at `large` or more, its count is the planner's estimate, so the cost
    stays flat however large the history grows.
    """
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["estimate_deliveries_by_status"])
        estimates = {row["status"]: row["estimate"] for row in as_dicts(cursor)}
        # The work in hand is always counted: its count must follow it closely.
        counted = [status for status in Status
                   if worth_counting(estimates.get(status), always=status in IN_HAND,
                                     large=large)]
        cursor.execute(QUERIES["count_deliveries_by_status"],
                       {status: exact_up_to if status in counted else 0 for status in Status})
        exact = as_dict(cursor)
        cursor.execute(QUERIES["oldest_due_age"])
        (oldest,) = cursor.fetchone()
    by_status = {status: combine(exact[status] if status in counted else None,
                                 estimates.get(status), bound=exact_up_to)
                 for status in Status}
    return Stats(by_status=by_status,
                 queue_depth=min(by_status[Status.PENDING].value, COUNT_CAP),
                 oldest_due_age_seconds=oldest)


@dataclass(frozen=True)
class AttemptCount:
    """Attempts of one config with one outcome that started in one time bucket."""

    config_id: str
    config_name: str | None
    bucket: datetime
    outcome: AttemptOutcome
    attempts: int


@dataclass(frozen=True)
class AttemptHistory:
    counts: list[AttemptCount]
    complete: bool  # False when the scan limit stopped before the window's start


def attempt_history(
    pool: ConnectionPool,
    scope: Scope,
    *,
    since: datetime,
    bucket_seconds: int,
    config_ids: list[str] | None,
    scan_limit: int,
) -> AttemptHistory:
    """Count the attempts since `since` by config, bucket and outcome, among the newest ones.

    At most `scan_limit` attempts are read (newest first, by primary key), whatever the
    table's size; `complete` says whether they reach back to `since`.
    """
    params = {**scope.params(), "since": since, "bucket_seconds": bucket_seconds,
              "config_ids": config_ids or None, "scan_limit": scan_limit}
    with pool.transaction() as db:
        db.execute(QUERIES["attempt_history"], params)
        rows = as_dicts(db)
    complete = all([row.pop("complete") for row in rows])  # a list: pop from every row
    counts = [AttemptCount(**row) for row in rows if row["config_id"] is not None]
    return AttemptHistory(counts=counts, complete=complete)

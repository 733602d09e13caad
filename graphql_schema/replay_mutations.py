"""Replays: one delivery, or one page of a creation window, each with an Idempotency-Key; and
skipping the failed delivery that holds an ordering key."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import strawberry

from db import deliveries, idempotency, inspection, ordering
from db import filters as db_filters
from db.errors import InvalidInput
from db.vocabulary import REPLAYABLE, PortalCapability, Status
from db.vocabulary import ReplayAction as ReplayWord
from graphql_schema import arguments, cursors, filters, tenancy
from graphql_schema.access import operator_mutation
from graphql_schema.connections import COUNT_BOUND, MAX_PAGE, page_size
from graphql_schema.context import Info
from graphql_schema.filters import DeliveryFilter
from graphql_schema.types import DeliverySummary

MAX_WINDOW = timedelta(days=90)  # longest creation window of a bulk replay
SAMPLE_SIZE = 10  # deliveries a dry run shows


ReplayAction = strawberry.enum(
    StrEnum("ReplayAction", [(action.name, action.value) for action in ReplayWord]))


@strawberry.type(description="REPLAYED: a failed delivery got a new generation, due now. "
                             "EXPEDITED: a pending delivery was made due now.")
class ReplayResult:
    delivery_id: strawberry.ID
    action: ReplayAction
    replay_generation: int
    next_attempt_at: datetime

    @classmethod
    def from_json(cls, result: dict[str, Any]) -> ReplayResult:
        return cls(delivery_id=strawberry.ID(str(result["deliveryId"])),
                   action=ReplayAction(result["action"]),
                   replay_generation=result["replayGeneration"],
                   next_attempt_at=datetime.fromisoformat(result["nextAttemptAt"]))


@strawberry.type
class SkippedReplay:
    delivery_id: strawberry.ID
    reason: str


@strawberry.type(description="One page of a bulk replay.")
class BulkReplayResult:
    replayed: list[strawberry.ID] = strawberry.field(description="Failed: new generation.")
    expedited: list[strawberry.ID] = strawberry.field(description="Pending: due now.")
    skipped: list[SkippedReplay]
    has_more: bool
    next_cursor: str | None = strawberry.field(
        description="Pass as `after`, with the same filter and a new Idempotency-Key.")
    dry_run: bool = strawberry.field(default=False, description="True: nothing was changed.")
    would_replay: int | None = strawberry.field(
        default=None, description="Dry run: the deliveries the whole filter would replay or "
                                  "expedite, over every page (exact up to "
                                  f"{COUNT_BOUND:,}, then an estimate).")
    would_replay_is_exact: bool | None = strawberry.field(
        default=None, description="Dry run: false when wouldReplay is an estimate.")
    sample: list[DeliverySummary] = strawberry.field(
        default_factory=list, description=f"Dry run: the first {SAMPLE_SIZE} of them, "
                                          "newest first.")


def _ids(numbers: list[int]) -> list[strawberry.ID]:
    return [strawberry.ID(str(n)) for n in numbers]


def _bulk_filter(info: Info, filter: DeliveryFilter, *,
                 replayable_only: bool = False) -> db_filters.DeliveryFilter:
    """Return the checked filter of a bulk replay (a window of at most 90 days, to now by
    default; failed and pending deliveries by default)."""
    checked = filters.to_db(info, filter, replayable_only=replayable_only)
    start = checked.created_after
    if start is None:
        raise InvalidInput("filter: a bulk replay needs createdAfter (or the deprecated "
                           "createdAtFrom): the window's start")
    end = checked.created_before or datetime.now(UTC)
    if end <= start:
        raise InvalidInput("filter: createdBefore must be after createdAfter")
    if end - start > MAX_WINDOW:
        raise InvalidInput(f"filter: the window may span at most {MAX_WINDOW.days} days")
    return dataclasses.replace(checked, created_before=end,
                               statuses=checked.statuses or list(REPLAYABLE))


def _filter_json(filter: db_filters.DeliveryFilter) -> dict[str, Any]:
    return {key: (value.isoformat() if isinstance(value, datetime) else
                  sorted(value) if isinstance(value, list) else value)
            for key, value in filter.params().items()}


def _replay_once(info: Info, operation: str, request: dict[str, Any], run: Any) -> dict:
    """Run `run(cursor)` once per Idempotency-Key; count what it did when it ran now."""
    context = info.context
    result, fresh = idempotency.run_once(
        context.pool, context.scope, key=idempotency.check_key(context.idempotency_key),
        fingerprint=idempotency.fingerprint(operation, request), operation=run)
    if fresh:
        replayed, expedited = result["replayed"], result["expedited"]
        for action, count in ((ReplayWord.REPLAYED, replayed), (ReplayWord.EXPEDITED, expedited)):
            for _ in range(count):
                context.telemetry.replayed(action.lower())
        context.telemetry.transition(Status.FAILED, Status.PENDING, replayed)
    return result["result"]


def _dry_run(info: Info, filter: DeliveryFilter) -> BulkReplayResult:
    """Say what a bulk replay of `filter` would change, changing nothing."""
    checked = _bulk_filter(info, filter, replayable_only=True)
    pool, scope = info.context.pool, info.context.scope
    total, exact = inspection.count(pool, scope, checked, bound=COUNT_BOUND)
    sample = inspection.deliveries(pool, scope, checked, limit=SAMPLE_SIZE)
    tenancy.listed(info, (row.tenant_id for row in sample))
    return BulkReplayResult(
        replayed=[], expedited=[], skipped=[], has_more=False, next_cursor=None, dry_run=True,
        would_replay=total, would_replay_is_exact=exact,
        sample=[DeliverySummary.from_row(row) for row in sample])


@strawberry.type(description="A failed delivery skipped: its key goes on past it.")
class SkipResult:
    delivery_id: strawberry.ID
    ordering_key: str
    sequence: int


@strawberry.type
class ReplayMutations:
    @operator_mutation(
        capability=PortalCapability.REPLAY,
        description="Let the ordering key a failed delivery holds go on past it: the next "
                    "delivery of the key becomes due. The delivery stays failed (and can "
                    "still be replayed: then it holds its key again if it fails again). "
                    "NOT_ELIGIBLE unless it is failed and holds its key.")
    def skip_delivery(self, info: Info, id: strawberry.ID) -> SkipResult:
        number = arguments.delivery_id(id)
        with info.context.pool.transaction() as cursor:
            skipped = ordering.skip(cursor, info.context.scope, number)
        return SkipResult(delivery_id=strawberry.ID(str(skipped.id)),
                          ordering_key=skipped.ordering_key, sequence=skipped.sequence)

    @operator_mutation(
        capability=PortalCapability.REPLAY,
        description="Replay a failed delivery (new generation) or expedite a pending one. "
                    "Needs the Idempotency-Key header; a key repeats its first result for 24 h.")
    def replay_delivery(self, info: Info, id: strawberry.ID) -> ReplayResult:
        idempotency.check_key(info.context.idempotency_key)
        number = arguments.delivery_id(id)

        def run(cursor: Any) -> dict:
            replay = deliveries.replay(cursor, info.context.scope, number)
            return {"replayed": int(replay.action == ReplayWord.REPLAYED),
                    "expedited": int(replay.action == ReplayWord.EXPEDITED),
                    "result": {"deliveryId": str(replay.delivery_id), "action": replay.action,
                               "replayGeneration": replay.replay_generation,
                               "nextAttemptAt": replay.next_attempt_at.isoformat()}}

        return ReplayResult.from_json(_replay_once(info, "replayDelivery", {"id": number}, run))

    @operator_mutation(
        capability=PortalCapability.REPLAY,
        description=f"Replay the failed and expedite the pending deliveries of one page (at "
                    f"most {MAX_PAGE}, newest first) of a creation window. Needs an "
                    "Idempotency-Key header; use a new one for each page.")
    def replay_deliveries(self, info: Info, filter: DeliveryFilter,
                          first: int | None = MAX_PAGE, after: str | None = None,
                          dry_run: bool = False) -> BulkReplayResult:
        if dry_run:
            return _dry_run(info, filter)
        idempotency.check_key(info.context.idempotency_key)
        limit = page_size(first)
        checked = _bulk_filter(info, filter)
        scope = info.context.scope
        request = {"filter": _filter_json(checked), "first": limit, "after": after}
        if filter.created_before is None and filter.created_at_to is None:
            request["filter"]["created_before"] = None  # "until now" repeats as itself
        binding = hashlib.sha256(json.dumps(request["filter"]).encode()).hexdigest()[:16]
        before = None
        if after is not None:
            position = cursors.decode("replayDeliveries", scope, after)
            if position.get("filter") != binding:
                raise InvalidInput("after: this cursor belongs to another filter; keep the "
                                   "filter of the first page")
            before = cursors.time_and_id_after("replayDeliveries", scope, after,
                                               key="createdAt")

        def run(cursor: Any) -> dict:
            page = deliveries.replay_page(cursor, scope, checked, before=before, limit=limit)
            next_cursor = (cursors.encode("replayDeliveries", scope,
                                          createdAt=page.last[0].isoformat(),
                                          id=page.last[1], filter=binding)
                           if page.has_more else None)
            return {"replayed": len(page.replayed), "expedited": len(page.expedited),
                    "result": {"replayed": page.replayed, "expedited": page.expedited,
                               "skipped": page.skipped, "hasMore": page.has_more,
                               "nextCursor": next_cursor}}

        result = _replay_once(info, "replayDeliveries", request, run)
        return BulkReplayResult(
            replayed=_ids(result["replayed"]), expedited=_ids(result["expedited"]),
            skipped=[SkippedReplay(delivery_id=strawberry.ID(str(id)), reason=reason)
                     for id, reason in result["skipped"]],
            has_more=result["hasMore"], next_cursor=result["nextCursor"])

"""Replays: one delivery, or one page of a creation window; each needs an Idempotency-Key."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

import strawberry

from db import deliveries, replays
from db.errors import InvalidInput
from graphql_schema import arguments, cursors
from graphql_schema.access import operator_mutation
from graphql_schema.connections import MAX_PAGE, page_size
from graphql_schema.context import Info
from graphql_schema.types import DeliveryStatus

MAX_WINDOW = timedelta(days=90)  # longest creation window of a bulk replay


@strawberry.enum
class ReplayAction(Enum):
    REPLAYED = "REPLAYED"
    EXPEDITED = "EXPEDITED"


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


@strawberry.input(description="Which deliveries a bulk replay walks through, newest first.")
class ReplayDeliveriesFilter:
    created_at_from: datetime = strawberry.field(description="RFC 3339; inclusive.")
    created_at_to: datetime | None = strawberry.field(
        default=None, description="RFC 3339; exclusive; now when omitted. At most 90 days "
                                  "after createdAtFrom.")
    status: list[DeliveryStatus] | None = strawberry.field(
        default=None, description="FAILED and PENDING when omitted; others are skipped.")
    config_ids: list[strawberry.ID] | None = None


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


def _ids(numbers: list[int]) -> list[strawberry.ID]:
    return [strawberry.ID(str(n)) for n in numbers]


def _window(filter: ReplayDeliveriesFilter) -> tuple[datetime, datetime]:
    start = arguments.instant(filter.created_at_from, "filter.createdAtFrom")
    end = arguments.instant(filter.created_at_to, "filter.createdAtTo") or datetime.now(UTC)
    if end <= start:
        raise InvalidInput("filter: createdAtTo must be after createdAtFrom")
    if end - start > MAX_WINDOW:
        raise InvalidInput(f"filter: the window may span at most {MAX_WINDOW.days} days")
    return start, end


def _filter_json(filter: ReplayDeliveriesFilter) -> dict[str, Any]:
    return {"from": filter.created_at_from.isoformat(),
            "to": filter.created_at_to.isoformat() if filter.created_at_to else None,
            "status": sorted(s.value for s in filter.status) if filter.status else None,
            "configIds": sorted(map(str, filter.config_ids)) if filter.config_ids else None}


def _replay_once(info: Info, operation: str, request: dict[str, Any], run: Any) -> dict:
    """Run `run(cursor)` once per Idempotency-Key; count what it did when it ran now."""
    context = info.context
    result, fresh = replays.run_once(
        context.pool, key=replays.check_key(context.idempotency_key),
        fingerprint=replays.fingerprint(operation, request), operation=run)
    if fresh:
        replayed, expedited = result["replayed"], result["expedited"]
        for action, count in (("replayed", replayed), ("expedited", expedited)):
            for _ in range(count):
                context.telemetry.replayed(action)
        context.telemetry.transition("failed", "pending", replayed)
    return result["result"]


@strawberry.type
class ReplayMutations:
    @operator_mutation(
        description="Replay a failed delivery (new generation) or expedite a pending one. "
                    "Needs the Idempotency-Key header; a key repeats its first result for 24 h.")
    def replay_delivery(self, info: Info, id: strawberry.ID) -> ReplayResult:
        replays.check_key(info.context.idempotency_key)
        number = arguments.delivery_id(id)

        def run(cursor: Any) -> dict:
            replay = deliveries.replay(cursor, number)
            return {"replayed": int(replay.action == "REPLAYED"),
                    "expedited": int(replay.action == "EXPEDITED"),
                    "result": {"deliveryId": str(replay.delivery_id), "action": replay.action,
                               "replayGeneration": replay.replay_generation,
                               "nextAttemptAt": replay.next_attempt_at.isoformat()}}

        return ReplayResult.from_json(_replay_once(info, "replayDelivery", {"id": number}, run))

    @operator_mutation(
        description=f"Replay the failed and expedite the pending deliveries of one page (at "
                    f"most {MAX_PAGE}, newest first) of a creation window. Needs an "
                    "Idempotency-Key header; use a new one for each page.")
    def replay_deliveries(self, info: Info, filter: ReplayDeliveriesFilter,
                          first: int | None = MAX_PAGE,
                          after: str | None = None) -> BulkReplayResult:
        replays.check_key(info.context.idempotency_key)
        limit = page_size(first)
        start, end = _window(filter)
        request = {"filter": _filter_json(filter), "first": limit, "after": after}
        binding = hashlib.sha256(json.dumps(request["filter"]).encode()).hexdigest()[:16]
        before_id = None
        if after is not None:
            position = cursors.decode("replayDeliveries", after)
            if position.get("filter") != binding:
                raise InvalidInput("after: this cursor belongs to another filter; keep the "
                                   "filter of the first page")
            before_id = cursors.id_after("replayDeliveries", after)
        statuses = [s.value for s in filter.status] if filter.status else ["failed", "pending"]
        config_ids = arguments.texts([str(i) for i in filter.config_ids or ()], "configIds")

        def run(cursor: Any) -> dict:
            page = deliveries.replay_page(
                cursor, created_from=start, created_to=end, statuses=statuses,
                config_ids=config_ids, before_id=before_id, limit=limit)
            next_cursor = (cursors.encode("replayDeliveries", id=page.last_id, filter=binding)
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

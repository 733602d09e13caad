"""Mutations: publish an event, replay a delivery, and the config mutations."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.tools import merge_types

from db import deliveries, events, replays
from db.errors import NotFound
from graphql_schema import arguments
from graphql_schema.access import operator_mutation
from graphql_schema.config_mutations import ConfigMutations
from graphql_schema.context import Info


@strawberry.input
class PublishEventInput:
    type: str
    payload: JSON = strawberry.field(description="Any JSON; sent to subscribers as `data`.")
    id: str | None = strawberry.field(
        default=None,
        description="Idempotency: an id published before returns its deliveries and "
                    "creates nothing. Generated when omitted.")


@strawberry.type
class PublishedEvent:
    event_id: str
    delivery_ids: list[strawberry.ID] = strawberry.field(
        description="One delivery per active config subscribed to the event's type.")


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


def _as_json(replay: deliveries.Replay) -> dict[str, Any]:
    return {"deliveryId": str(replay.delivery_id), "action": replay.action,
            "replayGeneration": replay.replay_generation,
            "nextAttemptAt": replay.next_attempt_at.isoformat()}


@strawberry.type
class EventMutations:
    @operator_mutation(description="Store an event and one delivery per subscribed config.")
    def publish_event(self, info: Info, input: PublishEventInput) -> PublishedEvent:
        event = events.new_event(input.id or f"evt_{uuid.uuid4().hex}", input.type,
                                 input.payload, max_payload=info.context.max_payload)
        ids = events.publish(info.context.pool, event, source="api")
        return PublishedEvent(event_id=event.id, delivery_ids=[strawberry.ID(str(i)) for i in ids])

    @operator_mutation(
        description="Replay a failed delivery (new generation) or expedite a pending one. "
                    "Needs the Idempotency-Key header; a key repeats its first result for 24 h.")
    def replay_delivery(self, info: Info, id: strawberry.ID) -> ReplayResult:
        context = info.context
        key = replays.check_key(context.idempotency_key)
        number = arguments.delivery_id(id)
        if number is None:
            raise NotFound(f"delivery {str(id)[:40]!r} not found")
        result, fresh = replays.run_once(
            context.pool, key=key,
            fingerprint=replays.fingerprint("replayDelivery", {"id": number}),
            operation=lambda cursor: _as_json(deliveries.replay(cursor, number)),
        )
        if fresh:
            context.telemetry.replayed(result["action"].lower())
            if result["action"] == ReplayAction.REPLAYED.value:
                context.telemetry.transition("failed", "pending", 1)
        return ReplayResult.from_json(result)


Mutation = merge_types("Mutation", (ConfigMutations, EventMutations))

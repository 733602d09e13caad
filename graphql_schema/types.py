"""The object types of the API, each built from a `db/` row by `from_row`."""

from __future__ import annotations

import base64
from datetime import datetime
from enum import Enum

import strawberry
from strawberry.scalars import JSON

from db import inspection
from db.configs import Config as ConfigRow
from db.rejected import RejectedEvent as RejectedRow
from graphql_schema.context import Info


@strawberry.enum(description="Where a delivery is in its lifecycle.")
class DeliveryStatus(Enum):
    PENDING = "pending"
    DELIVERING = "delivering"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@strawberry.type(description="A delivery without its payload, as listed.")
class DeliverySummary:
    id: strawberry.ID
    event_id: str
    event_type: str
    config_id: strawberry.ID
    status: DeliveryStatus
    attempt_count: int = strawberry.field(description="Attempts in the current generation.")
    replay_generation: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def fields_of(cls, row: inspection.DeliverySummary) -> dict:
        return {
            "id": strawberry.ID(str(row.id)),
            "event_id": row.event_id,
            "event_type": row.event_type,
            "config_id": strawberry.ID(row.config_id),
            "status": DeliveryStatus(row.status),
            "attempt_count": row.attempt_count,
            "replay_generation": row.replay_generation,
            "next_attempt_at": row.next_attempt_at,
            "last_status_code": row.last_status_code,
            "last_error": row.last_error,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        }

    @classmethod
    def from_row(cls, row: inspection.DeliverySummary) -> DeliverySummary:
        return cls(**cls.fields_of(row))


@strawberry.type(description="One HTTP call of a delivery; append-only.")
class Attempt:
    id: strawberry.ID
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: str = strawberry.field(
        description="success, http_error, timeout, network_error or blocked.")
    status_code: int = strawberry.field(description="0 when no response arrived.")
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: inspection.Attempt) -> Attempt:
        return cls(**{**vars(row), "id": strawberry.ID(str(row.id))})


@strawberry.type(description="A delivery with its event's payload and its attempts.")
class Delivery(DeliverySummary):
    payload: JSON
    occurred_at: datetime = strawberry.field(description="When the event occurred.")

    @strawberry.field(description="Every attempt of every generation, oldest first.")
    def attempts(self, info: Info) -> list[Attempt]:
        rows = inspection.attempts(info.context.pool, int(self.id))
        return [Attempt.from_row(row) for row in rows]

    @classmethod
    def from_detail(cls, row: inspection.DeliveryDetail) -> Delivery:
        return cls(**cls.fields_of(row), payload=row.payload, occurred_at=row.occurred_at)


@strawberry.type(description="A subscriber: where to POST which event types. No secret here.")
class Config:
    id: strawberry.ID
    name: str | None
    endpoint: str
    event_types: list[str]
    active: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: ConfigRow) -> Config:
        return cls(id=strawberry.ID(row.id), name=row.name, endpoint=row.endpoint,
                   event_types=list(row.event_types), active=row.active,
                   created_at=row.created_at, updated_at=row.updated_at)


@strawberry.type(description="A broker message that could not become an event.")
class RejectedEvent:
    id: strawberry.ID
    topic: str
    partition: int
    offset: str = strawberry.field(description="The broker offset (a 64-bit integer, as text).")
    reason: str
    raw: str | None = strawberry.field(description="The message's bytes, base64-encoded.")
    created_at: datetime

    @classmethod
    def from_row(cls, row: RejectedRow) -> RejectedEvent:
        raw = None if row.raw is None else base64.b64encode(row.raw).decode()
        return cls(id=strawberry.ID(str(row.id)), topic=row.topic, partition=row.partition,
                   offset=str(row.offset), reason=row.reason, raw=raw, created_at=row.created_at)


@strawberry.type
class StatusCount:
    status: DeliveryStatus
    count: int


@strawberry.type(description="Counts stop at 1,000,000 so that stats stay cheap.")
class Stats:
    by_status: list[StatusCount]
    queue_depth: int = strawberry.field(description="Pending deliveries.")
    oldest_due_age_seconds: float | None = strawberry.field(
        description="Seconds the oldest due pending delivery has waited; null if none is due.")
    rejected_events: int = strawberry.field(description="Broker messages rejected.")

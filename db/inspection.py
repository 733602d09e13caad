"""Read-only views of deliveries for operators: listings, one delivery with its attempts, stats."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.sql import QUERIES

STATUSES = ("pending", "delivering", "succeeded", "failed", "cancelled")
COUNT_CAP = 1_000_000  # counts stop here, so stats stay cheap on a large table


@dataclass(frozen=True)
class DeliverySummary:
    id: int
    event_id: str
    event_type: str
    config_id: str
    status: str
    attempt_count: int
    replay_generation: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class DeliveryDetail(DeliverySummary):
    """A delivery with its event's payload (decoded JSON) and the time the event occurred."""

    payload: Any = None
    occurred_at: datetime | None = None


@dataclass(frozen=True)
class Attempt:
    id: int
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: str
    status_code: int
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    created_at: datetime


@dataclass(frozen=True)
class Stats:
    by_status: dict[str, int]
    queue_depth: int
    oldest_due_age_seconds: float | None


def deliveries(
    pool: ConnectionPool,
    *,
    limit: int,
    before_id: int | None = None,
    config_id: str | None = None,
    statuses: Sequence[str] | None = None,
    event_type: str | None = None,
    event_id: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> list[DeliverySummary]:
    """Return up to `limit` deliveries matching every given filter, newest first."""
    params = {
        "limit": limit,
        "before_id": before_id,
        "config_id": config_id,
        "statuses": list(statuses) if statuses else None,
        "event_type": event_type,
        "event_id": event_id,
        "created_after": created_after,
        "created_before": created_before,
    }
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_deliveries"], params)
        return [DeliverySummary(**row) for row in as_dicts(cursor)]


def delivery(pool: ConnectionPool, id: int) -> DeliveryDetail | None:
    """Return one delivery with its payload, or None if there is none with that id."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_delivery"], {"id": id})
        row = as_dict(cursor)
    if row is None:
        return None
    return DeliveryDetail(**{**row, "payload": json.loads(row["payload"])})


def attempts(pool: ConnectionPool, delivery_id: int) -> list[Attempt]:
    """Return the attempts of a delivery, oldest first."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["attempts_of_delivery"], {"id": delivery_id})
        return [Attempt(**row) for row in as_dicts(cursor)]


def stats(pool: ConnectionPool, *, cap: int = COUNT_CAP) -> Stats:
    """Return the count of each status, the queue depth and the age of the oldest due delivery."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["count_deliveries_by_status"], {"cap": cap})
        by_status = dict(zip(STATUSES, cursor.fetchone(), strict=True))
        cursor.execute(QUERIES["oldest_due_age"])
        (oldest,) = cursor.fetchone()
    return Stats(by_status=by_status, queue_depth=by_status["pending"],
                 oldest_due_age_seconds=oldest)

"""Read the former model's `attempts` table and write converted deliveries (upgrade adapter)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.events import NewEvent
from db.pool import ConnectionPool
from db.sql import QUERIES


@dataclass(frozen=True)
class FormerAttempt:
    """One row of the former `attempts` table."""

    webhook_id: str
    config_id: str | None
    endpoint: str | None
    created_at: datetime
    updated_at: datetime
    payload: str | None
    status_code: int | None
    retry_attempt: int | None
    status: str
    next_retry_after: datetime | None


@dataclass(frozen=True)
class ConvertedDelivery:
    event_id: str
    config_id: str
    event_type: str
    status: str
    attempt_count: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    history: tuple[FormerAttempt, ...]


@dataclass(frozen=True)
class Progress:
    last_key: str
    counts: dict[str, int]
    completed: bool


def has_former_table(pool: ConnectionPool) -> bool:
    return pool.execute("former_attempts_table")[0][0]


def start(pool: ConnectionPool) -> Progress:
    """Index the former table by webhook and return where an earlier run stopped."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["index_former_attempts"])
        cursor.execute(QUERIES["read_backfill_progress"])
        last_key, counts, completed_at = cursor.fetchone()
    return Progress(last_key, dict(counts), completed_at is not None)


def remaining(pool: ConnectionPool, after: str) -> int:
    """Count the former webhooks after `after`."""
    return pool.execute("count_former_webhooks", {"after": after})[0][0]


def batch(pool: ConnectionPool, after: str, limit: int) -> list[FormerAttempt]:
    """Return the former attempts of the next `limit` webhooks after `after`."""
    rows = pool.execute("former_attempts_batch", {"after": after, "limit": limit})
    return [FormerAttempt(*row) for row in rows]


def config_states(pool: ConnectionPool, ids: Sequence[str]) -> dict[str, bool]:
    """Return {config id: active} for the given ids that exist."""
    return dict(pool.execute("active_configs_among", {"ids": list(ids)}))


def write(
    pool: ConnectionPool,
    events: Sequence[NewEvent],
    deliveries: Sequence[ConvertedDelivery],
    attempts: Any,
    *,
    last_key: str,
    counts: dict[str, int],
    done: bool,
) -> tuple[int, int]:
    """Store one converted batch and the progress in one transaction.

    Return how many deliveries and attempts were new.

    `attempts(delivery)` returns the attempt rows (number, endpoint, outcome, code, created)
    to store for a delivery that did not exist yet.
    """
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["insert_backfilled_events"], {
            "ids": [e.id for e in events], "types": [e.type for e in events],
            "payloads": [e.payload for e in events],
            "occurred_at": [e.occurred_at for e in events],
        })
        cursor.execute(QUERIES["insert_backfilled_deliveries"], {
            "event_ids": [d.event_id for d in deliveries],
            "config_ids": [d.config_id for d in deliveries],
            "types": [d.event_type for d in deliveries],
            "statuses": [d.status for d in deliveries],
            "attempt_counts": [d.attempt_count for d in deliveries],
            "next_attempts": [d.next_attempt_at for d in deliveries],
            "codes": [d.last_status_code for d in deliveries],
            "errors": [d.last_error for d in deliveries],
            "created": [d.created_at for d in deliveries],
            "updated": [d.updated_at for d in deliveries],
        })
        created = {(event_id, config_id): id for id, event_id, config_id in cursor.fetchall()}
        rows = [(created[(d.event_id, d.config_id)], *row)
                for d in deliveries if (d.event_id, d.config_id) in created
                for row in attempts(d)]
        if rows:
            ids, numbers, endpoints, outcomes, codes, stamps = zip(*rows, strict=True)
            cursor.execute(QUERIES["insert_backfilled_attempts"], {
                "delivery_ids": list(ids), "numbers": list(numbers),
                "generations": [0] * len(rows), "endpoints": list(endpoints),
                "outcomes": list(outcomes), "codes": list(codes),
                "durations": [0] * len(rows), "created": list(stamps),
            })
        if any(d.status == "pending" for d in deliveries):
            cursor.execute(QUERIES["wake_dispatchers"])
        cursor.execute(QUERIES["save_backfill_progress"],
                       {"last_key": last_key, "counts": json.dumps(counts), "done": done})
    return len(created), len(rows)

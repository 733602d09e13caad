"""Read the former model's `attempts` table and write converted deliveries (upgrade adapter)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from db.events import NewEvent
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.sql import QUERIES
from db.vocabulary import AttemptOutcome, Status


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
class ConvertedAttempt:
    """One former attempt, as the converted delivery keeps it."""

    number: int
    endpoint: str
    outcome: AttemptOutcome
    status_code: int
    created_at: datetime


@dataclass(frozen=True)
class ConvertedDelivery:
    event_id: str
    config_id: str
    event_type: str
    status: Status
    attempt_count: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    attempts: tuple[ConvertedAttempt, ...]  # stored only if the delivery is new


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
        row = as_dict(cursor)
    return Progress(row["last_key"], dict(row["counts"]), row["completed_at"] is not None)


def remaining(pool: ConnectionPool, after: str) -> int:
    """Count the former webhooks after `after`."""
    return pool.execute("count_former_webhooks", {"after": after})[0][0]


def batch(pool: ConnectionPool, after: str, limit: int) -> list[FormerAttempt]:
    """Return the former attempts of the next `limit` webhooks after `after`."""
    rows = pool.rows("former_attempts_batch", {"after": after, "limit": limit})
    return [FormerAttempt(**row) for row in rows]


def config_states(pool: ConnectionPool, ids: Sequence[str]) -> dict[str, bool]:
    """Return {config id: active} for the given ids that exist."""
    return {row["id"]: row["active"]
            for row in pool.rows("active_configs_among", {"ids": list(ids)})}


def write(
    pool: ConnectionPool,
    events: Sequence[NewEvent],
    deliveries: Sequence[ConvertedDelivery],
    *,
    last_key: str,
    counts: dict[str, int],
    done: bool,
) -> tuple[int, int]:
    """Store one converted batch, the attempts of its new deliveries and the progress in one
    transaction; return how many deliveries and attempts were new."""
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
        created = {(row["event_id"], row["config_id"]): row["id"] for row in as_dicts(cursor)}
        attempts = [(created[d.event_id, d.config_id], attempt)
                    for d in deliveries if (d.event_id, d.config_id) in created
                    for attempt in d.attempts]
        if attempts:
            cursor.execute(QUERIES["insert_backfilled_attempts"], {
                "delivery_ids": [id for id, _ in attempts],
                "numbers": [a.number for _, a in attempts],
                "generations": [0] * len(attempts),
                "endpoints": [a.endpoint for _, a in attempts],
                "outcomes": [a.outcome for _, a in attempts],
                "codes": [a.status_code for _, a in attempts],
                "durations": [0] * len(attempts),
                "created": [a.created_at for _, a in attempts],
            })
        cursor.execute(QUERIES["save_backfill_progress"],
                       {"last_key": last_key, "counts": json.dumps(counts), "done": done})
    return len(created), len(attempts)

"""Rejected broker messages: kept with their raw bytes and the reason, never dropped silently."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.pool import ConnectionPool
from db.rows import as_dicts
from db.sql import QUERIES


@dataclass(frozen=True)
class Rejection:
    """A message to quarantine: where it was in the broker, why, and its bytes."""

    topic: str
    partition: int
    offset: int
    reason: str
    raw: bytes | None


@dataclass(frozen=True)
class RejectedEvent:
    id: int
    topic: str
    partition: int
    offset: int
    reason: str
    raw: bytes | None
    created_at: datetime


def store(cursor: Any, rejections: Sequence[Rejection]) -> list[Rejection]:
    """Quarantine `rejections` in the caller's transaction; return those not already stored."""
    if not rejections:
        return []
    cursor.execute(
        QUERIES["insert_rejected_events"],
        {
            "topics": [r.topic for r in rejections],
            "partitions": [r.partition for r in rejections],
            "offsets": [r.offset for r in rejections],
            "reasons": [r.reason for r in rejections],
            "raws": [r.raw for r in rejections],
        },
    )
    new = {(row["topic"], row["partition"], row["offset"]) for row in as_dicts(cursor)}
    return [r for r in rejections if (r.topic, r.partition, r.offset) in new]


def page(pool: ConnectionPool, *, limit: int, after_id: int | None = None) -> list[RejectedEvent]:
    """Return up to `limit` rejected messages, newest first, older than `after_id`."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_rejected_events"], {"limit": limit, "after_id": after_id})
        rows = as_dicts(cursor)
    return [RejectedEvent(**{**row, "raw": None if row["raw"] is None else bytes(row["raw"])})
            for row in rows]


def count(pool: ConnectionPool) -> int:
    """Return how many broker messages were rejected."""
    return pool.execute("count_rejected_events")[0][0]

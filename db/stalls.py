"""Kafka partitions held because their next batch cannot be decoded, for operators to see.

A worker records a partition when it stops reading it (an unknown codec, a corrupt batch)
and clears it when the partition is read again: by another worker after a rebalance, or
after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from db.pool import ConnectionPool
from db.rows import as_dicts
from db.sql import QUERIES


@dataclass(frozen=True)
class Stall:
    """Where a consumer stopped reading a partition, and why."""

    topic: str
    partition: int
    offset: int
    reason: str


@dataclass(frozen=True)
class StalledPartition:
    group_id: str
    topic: str
    partition: int
    offset: int
    reason: str
    worker: str
    since: datetime


def record(pool: ConnectionPool, group_id: str, worker: str, stalls: Sequence[Stall]) -> None:
    """Record that `worker` of `group_id` holds `stalls`."""
    if not stalls:
        return
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["record_stalled_partitions"], {
            "group_id": group_id,
            "topics": [s.topic for s in stalls],
            "partitions": [s.partition for s in stalls],
            "offsets": [s.offset for s in stalls],
            "reasons": [s.reason for s in stalls],
            "workers": [worker for _ in stalls],
        })


def clear(pool: ConnectionPool, group_id: str, partitions: Iterable[tuple[str, int]],
          *, held: Iterable[tuple[str, int]] = ()) -> None:
    """Forget the stalls of `partitions` of `group_id`, except the `held` ones."""
    partitions, held = list(partitions), list(held)
    if not partitions:
        return
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["clear_stalled_partitions"], {
            "group_id": group_id,
            "topics": [t for t, _ in partitions], "partitions": [p for _, p in partitions],
            "held_topics": [t for t, _ in held], "held_partitions": [p for _, p in held],
        })


def listed(pool: ConnectionPool) -> list[StalledPartition]:
    """Return every stalled partition, oldest first."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_stalled_partitions"])
        return [StalledPartition(**row) for row in as_dicts(cursor)]

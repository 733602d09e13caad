"""Delete terminal deliveries past their age, in short bounded transactions.

Attempts go with their delivery (ON DELETE CASCADE); events go once no delivery refers to
them; quarantined broker messages go at the age of failed deliveries. A session advisory
lock keeps concurrent workers from running it twice at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from db import replays
from db.pool import ConnectionPool, transaction_on
from db.sql import QUERIES

DEFAULT_BATCH = 5000  # deliveries deleted per transaction (5,000 measured 1.5x faster than 1,000)


@dataclass
class Deleted:
    succeeded: int = 0
    finished: int = 0
    events: int = 0
    replay_requests: int = 0
    rejected_events: int = 0
    skipped: bool = False  # another worker held the lock


def run(
    pool: ConnectionPool,
    *,
    succeeded_age: float,
    finished_age: float,
    batch: int = DEFAULT_BATCH,
    pause: Callable[[], None] = lambda: None,
) -> Deleted:
    """Delete everything past its age (an age of 0 keeps forever); return what went.

    `pause` runs between batches so the caller can yield or stop.
    """
    with pool.connection() as conn:
        if not _scalar(conn, "try_retention_lock"):
            return Deleted(skipped=True)
        try:
            deleted = Deleted()
            if succeeded_age > 0:
                deleted.succeeded = _drain(conn, "delete_expired_succeeded", succeeded_age,
                                           batch, deleted, pause)
            if finished_age > 0:
                deleted.finished = _drain(conn, "delete_expired_finished", finished_age,
                                          batch, deleted, pause)
            ages = [age for age in (succeeded_age, finished_age) if age > 0]
            if ages:
                deleted.events += _delete_in_batches(conn, "delete_old_undelivered_events",
                                                     min(ages), batch, pause)
            deleted.replay_requests = _rowcount(conn, "delete_expired_replay_requests",
                                                {"age": replays.TTL})
            if finished_age > 0:  # quarantined messages are failures: they keep as long
                deleted.rejected_events = _delete_in_batches(
                    conn, "delete_expired_rejected_events", finished_age, batch, pause)
            return deleted
        finally:
            if not conn.closed:
                _scalar(conn, "release_retention_lock")


def _delete_in_batches(conn, name: str, age: float, batch: int,
                       pause: Callable[[], None]) -> int:
    """Run the bounded delete `name` until a batch comes back short; return the rows gone."""
    total = 0
    while count := _rowcount(conn, name, {"age": age, "limit": batch}):
        total += count
        pause()
        if count < batch:
            break
    return total


def _drain(conn, name: str, age: float, batch: int, deleted: Deleted,
           pause: Callable[[], None]) -> int:
    """Delete batches of `name` until one comes back short; return the deliveries deleted."""
    total = 0
    while True:
        with transaction_on(conn) as cursor:
            cursor.execute(QUERIES[name], {"age": age, "limit": batch})
            event_ids = [row[0] for row in cursor.fetchall()]
            cursor.execute(QUERIES["delete_orphan_events"], {"ids": list(set(event_ids))})
            deleted.events += cursor.rowcount
        total += len(event_ids)
        pause()
        if len(event_ids) < batch:
            return total


def _rowcount(conn, name: str, params: dict) -> int:
    with transaction_on(conn) as cursor:
        cursor.execute(QUERIES[name], params)
        return cursor.rowcount


def _scalar(conn, name: str):
    with transaction_on(conn) as cursor:
        cursor.execute(QUERIES[name])
        return cursor.fetchone()[0]

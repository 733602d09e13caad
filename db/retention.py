"""Delete terminal deliveries past their age, in short bounded transactions.

Attempts go with their delivery (ON DELETE CASCADE); events go once no delivery refers to
them; quarantined broker messages go at the age of failed deliveries. An advisory lock keeps
concurrent workers from running it twice at once: a session's lock for the whole pass on a
direct connection (the pool's own, or `session_pool`'s when the pool's go through a
transaction-mode pooler); without one, each batch's transaction takes the lock for itself,
and a pass that finds it taken stops there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from db import idempotency, rates
from db.pool import ConnectionPool, transaction_on
from db.sql import QUERIES
from db.vocabulary import Status

DEFAULT_BATCH = 5000  # deliveries deleted per transaction (5,000 measured 1.5x faster than 1,000)


@dataclass
class Deleted:
    succeeded: int = 0
    finished: int = 0
    events: int = 0
    replay_requests: int = 0
    rejected_events: int = 0
    attempt_counts: int = 0  # per-config attempt counts of periods past their window
    ordering_keys: int = 0  # keys forgotten with their last delivery
    skipped: bool = False  # another worker held the lock


def run(
    pool: ConnectionPool,
    *,
    succeeded_age: float,
    finished_age: float,
    batch: int = DEFAULT_BATCH,
    pause: Callable[[], None] = lambda: None,
    session_pool: ConnectionPool | None = None,
) -> Deleted:
    """Delete everything past its age (an age of 0 keeps forever); return what went.

    `pause` runs between batches so the caller can yield or stop.
    """
    deleted = Deleted()
    with pool.connection() as conn, _session_lock(conn, session_pool) as locked:
        if locked is False:
            deleted.skipped = True
            return deleted
        batches = _Batches(conn, per_transaction=locked is None)
        try:
            if succeeded_age > 0:
                deleted.succeeded = batches.drain((Status.SUCCEEDED,), succeeded_age,
                                                  batch, deleted, pause)
            if finished_age > 0:
                deleted.finished = batches.drain((Status.FAILED, Status.CANCELLED),
                                                 finished_age, batch, deleted, pause)
            ages = [age for age in (succeeded_age, finished_age) if age > 0]
            if ages:
                deleted.events += batches.delete("delete_old_undelivered_events", min(ages),
                                                 batch, pause)
            deleted.replay_requests = batches.rowcount("delete_expired_replay_requests",
                                                       {"age": idempotency.TTL})
            deleted.attempt_counts = batches.delete("delete_expired_attempt_counts",
                                                    rates.KEPT_SECONDS, batch, pause)
            if finished_age > 0:  # quarantined messages are failures: they keep as long
                deleted.rejected_events = batches.delete(
                    "delete_expired_rejected_events", finished_age, batch, pause)
        except _Taken:
            deleted.skipped = True
        return deleted


@contextlib.contextmanager
def _session_lock(conn, session_pool: ConnectionPool | None) -> Iterator[bool | None]:
    """Hold the retention lock of a session for the block: yield True if taken, False if
    another worker holds it, None when no direct session is at hand (then each transaction
    takes it)."""
    with contextlib.ExitStack() as stack:
        if conn.pooled:
            if session_pool is None:
                yield None
                return
            conn = stack.enter_context(session_pool.connection())
            if conn.pooled:  # the "direct" URL reaches a pooler too
                yield None
                return
        if not _scalar(conn, "try_retention_lock"):
            yield False
            return
        try:
            yield True
        finally:
            if not conn.closed:
                _scalar(conn, "release_retention_lock")


class _Taken(Exception):
    """Another worker's batch holds the retention lock."""


class _Batches:
    """The pass's transactions on one connection; each takes the retention lock for itself
    when `per_transaction`, and raises _Taken when another worker's batch holds it."""

    def __init__(self, conn, *, per_transaction: bool) -> None:
        self.conn = conn
        self.per_transaction = per_transaction

    @contextlib.contextmanager
    def transaction(self) -> Iterator:
        with transaction_on(self.conn) as cursor:
            if self.per_transaction:
                cursor.execute(QUERIES["try_retention_lock_for_transaction"])
                if not cursor.fetchone()[0]:
                    raise _Taken
            yield cursor

    def delete(self, name: str, age: float, batch: int, pause: Callable[[], None]) -> int:
        """Run the bounded delete `name` until a batch comes back short; return the rows
        gone."""
        total = 0
        while count := self.rowcount(name, {"age": age, "limit": batch}):
            total += count
            pause()
            if count < batch:
                break
        return total

    def drain(self, statuses: tuple[Status, ...], age: float, batch: int, deleted: Deleted,
              pause: Callable[[], None]) -> int:
        """Delete batches of deliveries in `statuses` past `age` until one comes back short;
        return the deliveries deleted."""
        total = 0
        while True:
            with self.transaction() as cursor:
                cursor.execute(QUERIES["delete_expired_deliveries"],
                               {"statuses": [str(s) for s in statuses], "age": age,
                                "limit": batch})
                rows = cursor.fetchall()
                events = sorted({(tenant_id, event_id) for tenant_id, event_id, _, _ in rows})
                cursor.execute(QUERIES["delete_orphan_events"],
                               {"tenant_ids": [t for t, _ in events],
                                "ids": [e for _, e in events]})
                deleted.events += cursor.rowcount
                keys = sorted({(config_id, key) for _, _, config_id, key in rows if config_id})
                if keys:
                    cursor.execute(QUERIES["delete_forgotten_ordering_keys"],
                                   {"config_ids": [c for c, _ in keys],
                                    "keys": [k for _, k in keys]})
                    deleted.ordering_keys += cursor.rowcount
            total += len(rows)
            pause()
            if len(rows) < batch:
                return total

    def rowcount(self, name: str, params: dict) -> int:
        with self.transaction() as cursor:
            cursor.execute(QUERIES[name], params)
            return cursor.rowcount


def _scalar(conn, name: str):
    with transaction_on(conn) as cursor:
        cursor.execute(QUERIES[name])
        return cursor.fetchone()[0]

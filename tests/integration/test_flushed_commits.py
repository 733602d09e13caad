"""Claims and records commit without waiting for the disk, then wait for it before the worker
acts: their row locks are free before the disk sync, and what the worker acts on is durable."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from db import deliveries
from db.adhoc import sql
from db.pool import ConnectionPool
from tests.factories import Factories

CLAIM = {"limit": 10, "owner": "flush-test", "cap": 25, "ramp": 0.0, "rate_burst": 1.0,
         "capacity": 50, "hold": 3, "room_ids": [], "rooms": []}


@pytest.fixture
def lazy_wal_writer(own_postgres):
    """The durable server with a WAL writer that flushes nothing for a minute on its own:
    only a synchronous commit puts an asynchronous one on disk meanwhile."""
    for statement in ("ALTER SYSTEM SET wal_writer_delay = '10s'",
                      "ALTER SYSTEM SET wal_writer_flush_after = '1GB'",
                      "SELECT pg_reload_conf()"):
        sql(own_postgres.dsn, statement, autocommit=True)
    return own_postgres


def _flushed_past(cursor, lsn: str) -> bool:
    cursor.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,))
    return cursor.fetchone()[0]


def test_a_claim_commits_unflushed_and_is_on_disk_once_the_flush_returns(lazy_wal_writer):
    with contextlib.closing(ConnectionPool(lazy_wal_writer.dsn, size=1)) as pool:
        Factories(pool).delivery()
        with pool.statement() as cursor:
            cursor.execute_prepared("claim_due_deliveries",
                                    {**CLAIM, "token": str(uuid.uuid4())}, flush_later=True)
            assert cursor.rowcount == 1
            with cursor.connection.cursor() as probe:  # the claim's rows stay readable
                probe.execute("SELECT pg_current_wal_insert_lsn()::text")
                committed = probe.fetchone()[0]  # at or past the claim's commit record
                assert not _flushed_past(probe, committed), "the claim waited for the disk"
            cursor.wait_for_flush()
            with cursor.connection.cursor() as probe:
                assert _flushed_past(probe, committed)
                # The setting ended with the claim's transaction: later statements are durable.
                probe.execute("SHOW synchronous_commit")
                assert probe.fetchone()[0] == "on"


def test_the_claim_and_the_record_leave_their_connection_durable(lazy_wal_writer):
    with contextlib.closing(ConnectionPool(lazy_wal_writer.dsn, size=1)) as pool:
        factories = Factories(pool)
        delivery_id = factories.delivery()
        [claimed] = deliveries.claim_due(pool, owner="flush-test", limit=10)
        assert claimed.id == delivery_id
        assert _synchronous_commit(pool) == "on"
        result = deliveries.AttemptResult(
            delivery_id=claimed.id, token=claimed.token, attempt_number=1,
            replay_generation=claimed.replay_generation, endpoint=claimed.endpoint,
            outcome="success", status_code=200, duration_ms=3, response_excerpt="ok",
            error=None, next_status=deliveries.Status.SUCCEEDED, next_delay=None,
            last_error=None)
        [moved] = deliveries.record_and_settle(pool, [result])[0]
        assert moved.status == deliveries.Status.SUCCEEDED
        assert _synchronous_commit(pool) == "on"
        assert factories.row(delivery_id)["status"] == "succeeded"


def test_an_unflushed_commit_needs_an_autocommit_connection(lazy_wal_writer):
    with contextlib.closing(ConnectionPool(lazy_wal_writer.dsn, size=1)) as pool, \
            pool.transaction() as cursor, pytest.raises(ValueError, match="autocommit"):
        cursor.execute_prepared("claim_due_deliveries", {**CLAIM, "token": str(uuid.uuid4())},
                                flush_later=True)


def _synchronous_commit(pool: ConnectionPool) -> str:
    """The setting of the pool's one connection, as the next statement would run."""
    with pool.statement() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


"""`webhooks migrate` rebuilds what an interrupted concurrent index build left INVALID.

Each interruption is a real one: a session holds a snapshot open, so that a concurrent build
waits for it once the index is recorded, and the build's backend is cancelled while it waits.
"""

from __future__ import annotations

import contextlib

import gevent
import psycopg2
import pytest

from db.adhoc import sql
from db.errors import StatementCancelled
from db.migrate import migrate, migrations
from tests.helpers import wait_until

BUILDER = "interrupted-build"  # the application name of a test's own index builds
CONFIGS_INACTIVE = ("CREATE INDEX CONCURRENTLY IF NOT EXISTS configs_inactive ON configs "
                    "(created_at DESC, id DESC) WHERE NOT active AND deleted_at IS NULL")


def snapshot_holder(dsn: str) -> psycopg2.extensions.connection:
    """Open a session that holds a snapshot until it is closed: a concurrent index build waits
    for it before its index may become valid."""
    holder = psycopg2.connect(dsn)
    holder.set_session(isolation_level="REPEATABLE READ")
    holder.cursor().execute("SELECT 1")  # touches no table: no migration waits for a lock
    return holder


def backend_waiting(dsn: str, application_name: str) -> int:
    """Return the backend of `application_name` once it waits for a held snapshot."""
    rows = wait_until(lambda: sql(
        dsn, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
             "AND application_name = %s AND wait_event = 'virtualxid'", (application_name,)))
    return rows[0][0]


def cancel_backend(dsn: str, pid: int) -> None:
    sql(dsn, "SELECT pg_cancel_backend(%s)", (pid,))


class HeldBuild:
    """A concurrent index build in a session of its own, held half way (its index recorded,
    invalid) by a snapshot that another session keeps open until the build is cancelled or
    let go."""

    def __init__(self, dsn: str, statement: str) -> None:
        self._dsn = dsn
        self._holder = snapshot_holder(dsn)
        self._builder = psycopg2.connect(dsn, application_name=BUILDER)
        self._builder.autocommit = True
        self._build = gevent.spawn(self._run, statement)
        try:
            self._pid = backend_waiting(dsn, BUILDER)
        except BaseException:
            self.end()
            raise

    def cancel(self) -> str:
        """Cancel the build; return how it ended."""
        cancel_backend(self._dsn, self._pid)
        return self.end()

    def end(self) -> str:
        """Let go of the snapshot, wait for the build to end and return how it ended."""
        self._holder.close()
        try:
            return self._build.get()
        finally:
            self._builder.close()

    def _run(self, statement: str) -> str:
        try:
            self._builder.cursor().execute(statement)
        except psycopg2.errors.QueryCanceled:
            return "cancelled"
        return "built"


def index_state(dsn: str) -> dict[str, tuple[bool, bool]]:
    """Return (valid, ready) of each index of the database's own tables, by name."""
    return {name: (valid, ready) for name, valid, ready in sql(
        dsn, "SELECT c.relname, i.indisvalid, i.indisready FROM pg_index AS i "
             "JOIN pg_class AS c ON c.oid = i.indexrelid "
             "WHERE c.relnamespace = 'public'::regnamespace")}


def test_a_migration_whose_index_build_was_interrupted_builds_it_again(database_url):
    (health_history,) = [m for m in migrations() if m.name == "health_history"]
    assert "deliveries_by_webhook_id" in "".join(health_history.concurrent_statements())
    sql(database_url, "DELETE FROM schema_migrations WHERE version = %s",
        (health_history.version,))
    sql(database_url, "DROP INDEX deliveries_by_webhook_id")
    with contextlib.closing(snapshot_holder(database_url)):
        run = gevent.spawn(migrate, database_url)
        cancel_backend(database_url, backend_waiting(database_url, "webhooks-migrate"))
        with pytest.raises(StatementCancelled):
            run.get()
    assert index_state(database_url)["deliveries_by_webhook_id"] == (False, True)

    lines: list[str] = []
    assert [m.version for m in migrate(database_url, report=lines.append)] == [
        health_history.version]
    assert index_state(database_url)["deliveries_by_webhook_id"] == (True, True)
    assert ("  index deliveries_by_webhook_id was left invalid by an interrupted build: "
            "building it again") in lines
    plan = sql(database_url, "SET enable_seqscan TO off; EXPLAIN SELECT id FROM deliveries "
                             "WHERE webhook_id = 'msg_1'")
    assert "deliveries_by_webhook_id" in "\n".join(line for (line,) in plan)


def test_every_run_rebuilds_invalid_indexes_and_drops_what_a_rebuild_left(database_url):
    sql(database_url, "DROP INDEX configs_inactive")
    assert HeldBuild(database_url, CONFIGS_INACTIVE).cancel() == "cancelled"  # applied long ago
    assert HeldBuild(database_url, "REINDEX INDEX CONCURRENTLY deliveries_by_webhook_id"
                     ).cancel() == "cancelled"
    before = index_state(database_url)
    assert (before["configs_inactive"], before["deliveries_by_webhook_id_ccnew"]) == (
        (False, True), (False, True))

    lines: list[str] = []
    assert migrate(database_url, report=lines.append) == []
    after = index_state(database_url)
    assert [name for name, (valid, _) in after.items() if not valid] == []
    assert after["configs_inactive"] == after["deliveries_by_webhook_id"] == (True, True)
    assert "deliveries_by_webhook_id_ccnew" not in after
    assert lines == [
        "dropping index public.deliveries_by_webhook_id_ccnew, left over from an interrupted "
        "concurrent rebuild or drop",
        "rebuilding invalid index public.configs_inactive"]


def test_an_index_another_session_is_building_is_left_to_its_build(database_url):
    sql(database_url, "DROP INDEX configs_inactive")
    build = HeldBuild(database_url, CONFIGS_INACTIVE)  # under way, invalid until it ends
    try:
        lines: list[str] = []
        migrate(database_url, report=lines.append)
        assert lines == ["index public.configs_inactive is invalid while an index build on "
                         "its table is under way: left alone"]
        assert index_state(database_url)["configs_inactive"] == (False, True)
    finally:
        outcome = build.end()
    assert outcome == "built"
    assert index_state(database_url)["configs_inactive"] == (True, True)

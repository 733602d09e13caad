"""The service behind a transaction-mode pooler (Debian's PgBouncer, as Heroku's, Supabase's and
Neon's poolers run): every transaction may run on another server session, so nothing may rely
on session state; with WEBHOOKS_DATABASE_DIRECT_URL what needs a session goes direct."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import gevent
import pytest

from db import configs, health, retention, tokens
from db.adhoc import dsn_parts, dsn_with, sql
from db.migrate import migrate, migrations
from db.pool import ConnectionPool, Pooler, connect
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.sql import QUERIES
from service.local.ports import reserve_port
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.api.conftest import Api
from tests.factories import Factories
from tests.helpers import wait_until
from tests.relay import relaying

EVENTS = 100
NO_LISTEN = "no LISTEN: the database URL reaches a transaction-mode pooler"


def _pooled_settings(settings: Settings, pooled_url: str, direct_url: str | None) -> Settings:
    return settings.replace(database_url=pooled_url, database_direct_url=direct_url)


def test_each_connection_knows_whether_a_pooler_stands_between(
        database_url, unix_socket_database_url, pgbouncer, pooled_database_url,
        unix_pooled_database_url):
    """Found out by who answered the connection's start-up, whatever the transport: PgBouncer
    on TCP or on a Unix socket is a pooler; PostgreSQL on either, or behind a relay that only
    forwards bytes, is not."""
    relay = reserve_port()
    with relaying(relay, int(dsn_parts(database_url)["port"])):
        reaches = [
            ("direct", database_url, Pooler.AUTO),
            ("direct on a Unix socket", unix_socket_database_url, Pooler.AUTO),
            ("through a TCP relay", dsn_with(database_url, port=relay), Pooler.AUTO),
            ("pooled", pooled_database_url, Pooler.AUTO),
            ("pooled on a Unix socket", pgbouncer.dsn_for(database_url, unix_socket=True),
             Pooler.AUTO),
            ("pooled on Unix sockets both ends", unix_pooled_database_url, Pooler.AUTO),
            ("said pooled", database_url, Pooler.TRANSACTION),
            ("said direct", pooled_database_url, Pooler.NONE),
        ]
        found = {}
        for name, dsn, pooler in reaches:
            conn = connect(dsn, pooler=pooler)
            try:
                with conn.cursor() as cursor:
                    cursor.execute("SHOW TimeZone")
                    found[name] = (conn.pooled, cursor.fetchone()[0])
            finally:
                conn.close()
    assert found == {
        "direct": (False, "UTC"), "direct on a Unix socket": (False, "UTC"),
        "through a TCP relay": (False, "UTC"), "pooled": (True, "UTC"),
        "pooled on a Unix socket": (True, "UTC"),
        "pooled on Unix sockets both ends": (True, "UTC"),
        "said pooled": (True, "UTC"), "said direct": (False, "UTC")}


def test_the_time_zone_holds_on_every_server_session_the_pooler_lends(pooled_database_url):
    """Other clients set other zones on the same server sessions; ours stays UTC."""
    others = [connect(pooled_database_url) for _ in range(4)]
    ours = ConnectionPool(pooled_database_url, size=1)
    try:
        for other in others:
            with other.cursor() as cursor:
                cursor.execute("SET TIME ZONE 'America/New_York'")
        zones = set()
        for _ in range(20):
            with ours.transaction() as cursor:
                cursor.execute("SHOW TimeZone")
                zones.add(cursor.fetchone()[0])
        assert zones == {"UTC"}
    finally:
        ours.close()
        for other in others:
            other.close()


@pytest.fixture(params=["pooled_database_url", "unix_pooled_database_url"],
                ids=["on TCP", "on Unix sockets"])
def pooled_url(request) -> str:
    """The test's database through PgBouncer on TCP, or on Unix sockets from end to end."""
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("direct", [False, True], ids=["pooled only", "with a direct URL"])
def test_the_pipeline_delivers_everything_through_the_pooler(
        direct, settings, database_url, pooled_url, receiver_factory, start_worker,
        caplog):
    """Claims, records and health settlements (prepared statements on a direct connection)
    run through the pooler however it is reached."""
    caplog.set_level(logging.WARNING, logger="webhooks.wakeup")
    receivers = [receiver_factory() for _ in range(3)]
    pool = ConnectionPool(pooled_url, size=2)
    make = Factories(pool)
    try:
        for receiver in receivers:
            make.config(endpoint=receiver.url, event_types=["t"])
        worker = start_worker(database_url=pooled_url,
                              database_direct_url=database_url if direct else None)
        for n in range(EVENTS):
            make.event(type="t", id=f"e{n}")
        for receiver in receivers:
            assert sorted(json.loads(r.body)["id"] for r in receiver.wait_for(EVENTS)) == sorted(
                f"e{n}" for n in range(EVENTS))
        wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                      "'succeeded'") == 3 * EVENTS)
        listening = not any(r.getMessage().startswith(NO_LISTEN) for r in caplog.records)
        assert listening is direct
        with worker.pool.connection() as conn:  # the worker's own connections
            assert conn.pooled
    finally:
        pool.close()


@pytest.mark.parametrize("direct", [False, True], ids=["pooled only", "with a direct URL"])
def test_a_resumed_config_gets_its_held_deliveries(direct, database_url, pooled_database_url,
                                                   receiver_factory, start_worker):
    paused_receiver, other_receiver = receiver_factory(), receiver_factory()
    pool = ConnectionPool(pooled_database_url, size=2)
    make = Factories(pool)
    try:
        paused = make.config(endpoint=paused_receiver.url, event_types=["t"])
        make.config(endpoint=other_receiver.url, event_types=["t"])
        health.pause(pool, PLATFORM, paused.id, reason="maintenance")
        start_worker(database_url=pooled_database_url,
                     database_direct_url=database_url if direct else None)
        for n in range(5):
            make.event(type="t", id=f"held{n}")
        other_receiver.wait_for(5)  # the worker claimed what it could: not the paused ones
        assert paused_receiver.requests == []
        health.resume(pool, PLATFORM, paused.id, reason="fixed")
        assert len(paused_receiver.wait_for(5)) == 5
    finally:
        pool.close()


def test_migrations_run_through_the_pooler_once_and_leave_no_lock(pgbouncer, server_dsn,
                                                                  empty_database_url):
    pooled = pgbouncer.dsn_for(empty_database_url)
    runs = [gevent.spawn(migrate, pooled) for _ in range(3)]
    gevent.joinall(runs, raise_error=True)
    applied = [migration.version for run in runs for migration in run.value]
    assert sorted(applied) == [migration.version for migration in migrations()]
    assert migrate(pooled) == []
    assert sql(server_dsn, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [(0,)]


def test_retention_through_the_pooler_takes_its_lock_per_transaction(
        database_url, pooled_database_url, make):
    config = make.config(event_types=["t"])
    old = [make.delivery(config, status="succeeded",
                         updated_at=datetime.now(UTC) - timedelta(days=40)) for _ in range(3)]
    pool = ConnectionPool(pooled_database_url, size=2)
    holder = connect(database_url)
    try:
        with holder.cursor() as cursor:  # another worker's batch, under way
            cursor.execute(QUERIES["try_retention_lock_for_transaction"])
            assert cursor.fetchone()[0]
            assert retention.run(pool, succeeded_age=30 * 86400, finished_age=0).skipped
        holder.rollback()
        deleted = retention.run(pool, succeeded_age=30 * 86400, finished_age=0)
        assert (deleted.skipped, deleted.succeeded) == (False, len(old))
    finally:
        holder.close()
        pool.close()


def test_retention_with_a_direct_url_holds_its_lock_for_the_whole_pass(
        database_url, pooled_database_url, make):
    pool = ConnectionPool(pooled_database_url, size=2)
    direct = ConnectionPool(database_url, size=1)
    holder = connect(database_url, autocommit=True)
    try:
        with holder.cursor() as cursor:  # another worker's pass, holding the session lock
            cursor.execute(QUERIES["try_retention_lock"])
            assert retention.run(pool, succeeded_age=1, finished_age=0,
                                 session_pool=direct).skipped
            cursor.execute(QUERIES["release_retention_lock"])
        assert not retention.run(pool, succeeded_age=1, finished_age=0,
                                 session_pool=direct).skipped
    finally:
        holder.close()
        direct.close()
        pool.close()


def test_the_api_checks_tokens_and_replays_with_idempotency_keys_through_the_pooler(
        settings, pooled_database_url, receiver):
    pool = ConnectionPool(pooled_database_url, size=3)
    try:
        app = create_app(settings.replace(database_url=pooled_database_url), pool=pool,
                         telemetry=Telemetry(role="web"))
        operator = Api(app.test_client(), tokens.create(pool, name="ops", tenant_id=None,
                                                        role="operator")[1])
        viewer = Api(app.test_client(), tokens.create(pool, name="view", tenant_id=None,
                                                      role="viewer")[1])
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=receiver.url, event_types=["t"])
        published = operator.data('mutation { publishEvent(input: {type: "t", payload: {}}) '
                                  '{ eventId deliveryIds } }')["publishEvent"]
        (delivery_id,) = published["deliveryIds"]
        sql(pooled_database_url, "UPDATE deliveries SET status = 'failed', "
            "next_attempt_at = NULL WHERE id = %s", (delivery_id,))
        replay = 'mutation($id: ID!) { replayDelivery(id: $id) { action replayGeneration } }'
        headers = {"Idempotency-Key": "k-1"}
        first = operator.data(replay, {"id": delivery_id}, headers=headers)
        again = operator.data(replay, {"id": delivery_id}, headers=headers)
        assert first == again == {"replayDelivery": {"action": "REPLAYED",
                                                     "replayGeneration": 1}}
        assert viewer.code(replay, {"id": delivery_id},
                           headers={"Idempotency-Key": "k-2"}) == "FORBIDDEN"
        assert operator.code("{ stats { queueDepth } }", token="whk_nonsense") == (
            "UNAUTHENTICATED")
        assert published["eventId"]
    finally:
        pool.close()

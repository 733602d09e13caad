"""Faults of a managed PostgreSQL, each survived with nothing lost: a primary that turns
read-only for a while (as during a failover), a statement cancelled by `statement_timeout`,
and the connection limit of a small plan reached."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import psycopg2
import pytest
from psycopg2.extensions import make_dsn, parse_dsn

from db import configs, tokens
from db.adhoc import sql
from db.errors import TooManyConnections
from db.pool import ConnectionPool, connect
from db.scope import DEFAULT_TENANT_ID
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.api.conftest import Api
from tests.helpers import wait_until
from tests.receivers import Reply

PUBLISH = 'mutation { publishEvent(input: {type: "t", payload: {}}) { eventId } }'


def _alter(server_dsn: str, database_url: str, change: str) -> None:
    """Change a setting of the test's database, for the sessions that start from now on."""
    sql(server_dsn, f"ALTER DATABASE {parse_dsn(database_url)['dbname']} {change}",
        autocommit=True)


def _end_sessions(server_dsn: str, database_url: str) -> None:
    """End every session of the test's database, as a failover does."""
    sql(server_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                    "AND pid <> pg_backend_pid()", (parse_dsn(database_url)["dbname"],),
        autocommit=True)


def _logged(caplog, text: str) -> list[str]:
    """Return the log lines (message and error) that contain `text`."""
    lines = [f"{r.getMessage()} {getattr(r, 'error', '')}" for r in caplog.records]
    return [line for line in lines if text in line]


def _succeeded(make) -> int:
    return make.count("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")


def test_a_primary_turned_read_only_answers_unavailable_and_both_recover_on_their_own(
        server_dsn, database_url, settings, make, receiver, start_worker, caplog):
    caplog.set_level(logging.WARNING)
    pool = ConnectionPool(database_url, size=2)  # the API's
    try:
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=receiver.url, event_types=["t"])
        app = create_app(settings, pool=pool, telemetry=Telemetry(role="web"))
        api = Api(app.test_client(), tokens.create(pool, name="ops", tenant_id=None,
                                                   role="operator")[1])
        start_worker()
        api.data(PUBLISH)
        receiver.wait_for(1)

        _alter(server_dsn, database_url, "SET default_transaction_read_only = on")
        _end_sessions(server_dsn, database_url)
        for query in (PUBLISH, PUBLISH, PUBLISH, "{ stats { queueDepth } }"):
            # the ended sessions, then new ones, all read-only (a token's use is written too)
            response = api.post(query)
            error = response.get_json()["errors"][0]
            assert (response.status_code, error["extensions"]["code"]) == (503, "UNAVAILABLE")
        wait_until(lambda: _logged(caplog, "read-only transaction"))  # the worker's tries

        _alter(server_dsn, database_url, "RESET default_transaction_read_only")
        # Nothing restarted, no session ended: each side drops the sessions that refused a
        # write and opens writable ones.
        wait_until(lambda: api.post(PUBLISH).status_code == 200)
        receiver.wait_for(2)
        wait_until(lambda: _succeeded(make) == 2)
    finally:
        pool.close()


def test_a_cancelled_record_is_named_tried_a_few_times_and_never_wedges_the_recorder(
        server_dsn, database_url, make, receiver, start_worker, caplog):
    caplog.set_level(logging.WARNING, logger="webhooks.dispatcher")
    config = make.config(endpoint=receiver.url, event_types=["t"])
    make.event(type="t")
    _alter(server_dsn, database_url, "SET statement_timeout = '1s'")
    holder = psycopg2.connect(database_url)  # holds the config's row: every record waits
    try:
        with holder.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")
            cursor.execute("SELECT 1 FROM configs WHERE id = %s FOR UPDATE", (config.id,))
        start_worker(http_timeout=2.0, claim_timeout=10.0, recovery_period=1.0)
        receiver.wait_for(1)
        wait_until(lambda: _logged(caplog, "recording an attempt was cancelled every time"))
        assert _logged(caplog, "record_and_settle: canceling statement due to statement "
                               "timeout")
    finally:
        holder.close()
    # The recorder goes on: the next result is recorded; the cancelled one's claim is
    # recovered and sent again.
    make.event(type="t")
    wait_until(lambda: _succeeded(make) == 2)
    assert len(receiver.requests) == 3


@pytest.fixture
def limited_role_url(server_dsn, database_url) -> Iterator[str]:
    """The test's database as a role of its own that may open two connections at most, as
    the role of a small managed plan (a superuser would not be held to the limit)."""
    role = f"app_{uuid.uuid4().hex[:8]}"
    sql(server_dsn, f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 2", autocommit=True)
    sql(database_url, f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}; "
                      f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
    yield make_dsn(database_url, user=role)
    sql(server_dsn, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE usename = '{role}'", autocommit=True)
    sql(database_url, f"DROP OWNED BY {role}", autocommit=True)
    sql(server_dsn, f"DROP ROLE {role}", autocommit=True)


def test_a_connection_beyond_the_limit_is_refused_with_what_to_do(limited_role_url):
    held = [connect(limited_role_url) for _ in range(2)]
    try:
        with pytest.raises(TooManyConnections, match="connection limit is reached; lower "
                                                     "WEBHOOKS_DB_POOL_SIZE, run fewer "
                                                     "processes, or raise the limit"):
            connect(limited_role_url)
    finally:
        for conn in held:
            conn.close()


def test_the_connection_limit_of_a_small_plan_is_survived_with_a_clear_log(
        limited_role_url, make, receiver_factory, start_worker, caplog):
    caplog.set_level(logging.WARNING)
    receiver = receiver_factory(lambda request: Reply(200, delay=0.2))  # sends overlap records
    make.config(endpoint=receiver.url, event_types=["t"])
    for _ in range(50):
        make.event(type="t")
    start_worker(database_url=limited_role_url, db_pool_size=10)  # wants 10 and a LISTEN
    assert len(receiver.wait_for(50)) == 50
    wait_until(lambda: _logged(caplog, "the database's connection limit is reached"))
    wait_until(lambda: _succeeded(make) == 50)

"""Shared fixtures: one PostgreSQL per session, one migrated template, a fresh copy per test.

gevent's patches are applied before this file is imported (tests/gevent_first.py).
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import gevent
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from db.adhoc import dsn_for, dsn_parts, dsn_with, sql
from db.migrate import migrate
from db.pool import ConnectionPool
from service.local.pgbouncer import LocalPgBouncer
from service.local.postgres import LocalPostgres, temporary_postgres
from service.runtime.settings import Settings
from tests.factories import Factories
from tests.helpers import PATIENCE

pytest_plugins = ["tests.receivers", "tests.kafka"]

# Property tests check properties, not speed: no per-example deadline, and no failure because
# generating examples is slow on a busy machine.
hypothesis_settings.register_profile(
    "busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("busy-machine")
# A skip reason with these words means a whole group of tests did not run (the browser tests
# without Chromium); the end of the run repeats it, so that such a run never reads as complete.
NOT_RUN = "tests NOT run"


@pytest.fixture(scope="session", autouse=True)
def audit_trail_kept_apart(tmp_path_factory) -> None:
    """The commands append their audit lines under $XDG_STATE_HOME: the tests' own directory,
    never the home of whoever runs them (the processes tests start inherit it)."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))


def pytest_collection_modifyitems(items) -> None:
    """Run the long proofs (marked slow) first: spread over workers, a run then ends with
    short tests instead of waiting for one long one that started last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_terminal_summary(terminalreporter) -> None:
    reasons = [report.longrepr[2] for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, tuple)]
    for reason in dict.fromkeys(r.removeprefix("Skipped: ") for r in reasons if NOT_RUN in r):
        terminalreporter.write_sep("!", reason, red=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres | None]:
    """The session's embedded server, or None when WEBHOOKS_TEST_DATABASE_URL is set."""
    if os.environ.get("WEBHOOKS_TEST_DATABASE_URL"):
        yield None
        return
    with temporary_postgres(fast_unsafe=True) as server:
        yield server


@pytest.fixture
def own_postgres() -> Iterator[LocalPostgres]:
    """A migrated PostgreSQL server of this test alone, free to be killed and started again
    (tests/outages.py).

    Durable (no fsync=off, no synchronous_commit=off): a crash must keep what was committed,
    or offsets would be committed for events the crash then took away.
    """
    with temporary_postgres(fast_unsafe=False) as server:
        migrate(server.dsn)
        yield server


@pytest.fixture(scope="session")
def server_dsn(postgres_server) -> str:
    """DSN of a maintenance database on the test server."""
    return os.environ.get("WEBHOOKS_TEST_DATABASE_URL") or postgres_server.dsn


@pytest.fixture(scope="session")
def database_factory(server_dsn):
    """Create (and drop at session end) databases on the test server; returns a maker."""
    created: list[str] = []

    def create(template: str | None = None, prefix: str = "webhooks_test") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        clause = f" TEMPLATE {template}" if template else ""
        sql(server_dsn, f"CREATE DATABASE {name}{clause}", autocommit=True)
        created.append(name)
        return name

    yield create
    for name in reversed(created):
        sql(server_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", autocommit=True)


@pytest.fixture(scope="session")
def template_database(server_dsn, database_factory) -> str:
    """A database with every migration applied, copied for each test."""
    name = database_factory(prefix="webhooks_template")
    migrate(dsn_for(server_dsn, name))
    return name


class TemplateCopies:
    """Copies of the template made one ahead and dropped behind, each in a greenlet.

    A copy costs the server ≈ 0.1 s to make and as much to drop; made while the test before
    runs (tests mostly wait on sockets), a test's setup finds its copy ready. A copy that could
    not be made fails the test that wanted it; a drop that failed fails the session.
    """

    def __init__(self, server_dsn: str, template: str, create) -> None:
        self._server_dsn = server_dsn
        self._make = lambda: create(template=template)
        self._next = gevent.spawn(self._make)
        self._drops: list[gevent.Greenlet] = []

    def take(self) -> str:
        try:
            return self._next.get()  # raises what made the copy fail
        finally:
            self._next = gevent.spawn(self._make)

    def drop(self, name: str) -> None:
        self._drops.append(gevent.spawn(
            sql, self._server_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
            autocommit=True))

    def settle(self) -> None:
        """Wait until no copy or drop is under way. Before a fork: under gevent a forked child
        runs the greenlets it inherits once it waits for anything, and one of them finishing
        its statement there closes the connection it shares with the parent."""
        self._next.join()
        gevent.joinall(self._drops)

    def close(self) -> None:
        """Wait for the spare and the drops; raise what made a drop fail."""
        self.settle()  # the spare is dropped with the factory's other databases
        for drop in self._drops:
            if drop.exception is not None:
                raise drop.exception


@pytest.fixture(scope="session")
def template_copies(server_dsn, database_factory, template_database) -> Iterator[TemplateCopies]:
    copies = TemplateCopies(server_dsn, template_database, database_factory)
    yield copies
    copies.close()


@pytest.fixture
def database_url(server_dsn, template_copies) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = template_copies.take()
    yield dsn_for(server_dsn, name)
    template_copies.drop(name)


@pytest.fixture(scope="session")
def pgbouncer(postgres_server, server_dsn) -> Iterator[LocalPgBouncer]:
    """Debian's PgBouncer in transaction mode in front of the session's server; skipped
    without it (failed under CI, which installs it)."""
    _require_pgbouncer()
    with LocalPgBouncer(server_dsn) as bouncer:
        yield bouncer


def _require_pgbouncer() -> None:
    """Skip the test when PgBouncer is not installed; fail it under CI, which installs it."""
    missing = LocalPgBouncer.missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}; CI must run them (.ci/run installs PgBouncer)")
        pytest.skip(missing)


@pytest.fixture
def pooled_database_url(pgbouncer, database_url) -> str:
    """The test's database as reached through the transaction-mode pooler."""
    return pgbouncer.dsn_for(database_url)


@pytest.fixture(scope="session")
def server_unix_socket_dsn(server_dsn) -> str:
    """The test server's maintenance database reached by its Unix socket; skipped when the
    server has none on this machine."""
    ((folders, port),) = sql(server_dsn, "SELECT current_setting('unix_socket_directories'), "
                                         "current_setting('port')")
    for folder in (name.strip() for name in folders.split(",")):
        if folder.startswith("/") and (Path(folder) / f".s.PGSQL.{port}").exists():
            return dsn_with(server_dsn, host=folder, port=port)
    pytest.skip("the test server has no Unix socket on this machine")


@pytest.fixture
def unix_socket_database_url(server_unix_socket_dsn, database_url) -> str:
    """The test's database reached directly, by the server's Unix socket."""
    return dsn_for(server_unix_socket_dsn, dsn_parts(database_url)["dbname"])


@pytest.fixture(scope="session")
def pgbouncer_beside_postgres(server_unix_socket_dsn) -> Iterator[LocalPgBouncer]:
    """A second PgBouncer as it often runs on the database's own host: it reaches the server by
    its Unix socket, and clients reach it by its own (`unix_pooled_database_url`)."""
    _require_pgbouncer()
    with LocalPgBouncer(server_unix_socket_dsn) as bouncer:
        yield bouncer


@pytest.fixture
def unix_pooled_database_url(pgbouncer_beside_postgres, database_url) -> str:
    """The test's database through the pooler, on Unix sockets from end to end."""
    return pgbouncer_beside_postgres.dsn_for(database_url, unix_socket=True)


@pytest.fixture
def empty_database_url(server_dsn, database_factory) -> str:
    """A database with no tables at all."""
    return dsn_for(server_dsn, database_factory())


@pytest.fixture
def pool(database_url) -> Iterator[ConnectionPool]:
    pool = ConnectionPool(database_url, size=10)
    yield pool
    pool.close()


@pytest.fixture
def settings(database_url) -> Settings:
    """Settings for tests: the test database, private endpoints allowed, a quick poll.

    An attempt may take a minute: a test that holds a response while it looks at the
    database must not see the attempt time out because the machine is busy.
    """
    return Settings.load(
        {},
        {
            "database_url": database_url,
            "allow_private_endpoints": "true",
            "http_timeout": "60s",
            "retry_period": "1s",
            "metrics_port": "0",
            # Tests of retries and budgets fail an endpoint on purpose, many times over; the
            # breaker would hold those deliveries. Its own tests switch it on.
            "circuit_failures": "0",
        },
    )


@pytest.fixture
def processes():
    """Worker processes a test starts (append them): killed if still running at teardown."""
    started = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(PATIENCE)


@pytest.fixture
def make(pool) -> Factories:
    """Factories for configs, events and deliveries in the test database."""
    return Factories(pool)


@pytest.fixture
def start_worker(settings):
    """Start in-process workers with `settings` plus overrides; all stop at teardown."""
    from service.worker import Worker

    workers = []

    def start(**overrides):
        worker_settings = settings.replace(**overrides) if overrides else settings
        worker = Worker(worker_settings)
        worker.start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()

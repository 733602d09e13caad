"""TLS to PostgreSQL as managed databases require it: `sslmode=require`, and `verify-full`
against the CA that signed the server's certificate, with a password that never appears in
a log line or an error message (a PostgreSQL that accepts TLS only: Debian's server)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from db.errors import DatabaseUnavailable
from db.migrate import migrate
from db.pool import ConnectionPool, connect
from service.local.processes import ROOT
from service.local.tls_postgres import NOT_INSTALLED, TlsPostgres, server_binaries
from tests.factories import Factories
from tests.helpers import PATIENCE

PASSWORD = "pw-Th4t-Must-N3ver-Show"


@pytest.fixture(scope="module")
def tls_postgres():
    if server_binaries() is None:
        if os.environ.get("CI"):
            pytest.fail(f"{NOT_INSTALLED}; CI must run them (.ci/run installs it)")
        pytest.skip(NOT_INSTALLED)
    with TlsPostgres(PASSWORD) as server:
        migrate(server.url(sslmode="require"))
        yield server


def _on_tls(url: str) -> bool:
    conn = connect(url)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            return cursor.fetchone()[0]
    finally:
        conn.close()


def test_require_and_verify_full_connect_over_tls(tls_postgres):
    assert _on_tls(tls_postgres.url(sslmode="require"))
    assert _on_tls(tls_postgres.url(sslmode="verify-full", sslrootcert=str(tls_postgres.ca)))


@pytest.mark.parametrize("query, says", [
    ({"sslmode": "verify-full", "sslrootcert": "OTHER"}, "certificate verify failed"),
    ({"sslmode": "disable"}, "no encryption"),
])
def test_a_connection_refused_says_why_and_never_shows_the_password(tls_postgres, query, says):
    query = {name: str(tls_postgres.other_ca) if value == "OTHER" else value
             for name, value in query.items()}
    with pytest.raises(DatabaseUnavailable) as refused:
        connect(tls_postgres.url(**query))
    assert says in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_a_worker_delivers_over_verified_tls(tls_postgres, settings, receiver, start_worker):
    url = tls_postgres.url(sslmode="verify-full", sslrootcert=str(tls_postgres.ca))
    pool = ConnectionPool(url, size=2)
    try:
        make = Factories(pool)
        make.config(endpoint=receiver.url, event_types=["tls"])
        make.event(type="tls", id="over-tls")
        start_worker(database_url=url)
        (request,) = receiver.wait_for(1)
        assert b'"over-tls"' in request.body
    finally:
        pool.close()


@pytest.mark.parametrize("command", [["migrate"], ["stats"], ["worker"]])
def test_no_output_of_a_failing_command_shows_the_password(tls_postgres, command):
    """Every way to fail at the connection: a wrong CA, a wrong password, no TLS."""
    for url in (tls_postgres.url(sslmode="verify-full", sslrootcert=str(tls_postgres.other_ca)),
                tls_postgres.url(sslmode="require").replace(PASSWORD, PASSWORD + "x"),
                tls_postgres.url(sslmode="disable")):
        result = subprocess.run(
            [sys.executable, "-m", "service", *command], cwd=ROOT, capture_output=True,
            text=True, timeout=PATIENCE, check=False,
            env={**os.environ, "DATABASE_URL": url, "WEBHOOKS_STARTUP_TIMEOUT": "1s",
                 "WEBHOOKS_METRICS_PORT": "0"})
        assert result.returncode == 3, (command, result.stdout, result.stderr)
        assert PASSWORD not in result.stdout + result.stderr

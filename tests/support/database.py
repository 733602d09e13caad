"""A local database seen from outside the service, one statement at a time.

For the reliability runs (tests/reliability) and the benchmarks (bench/), which work on the
embedded servers they start; the test fixtures (tests/conftest.py) create their databases
with it too.
"""

from __future__ import annotations

import psycopg2
from psycopg2.extensions import make_dsn

from db.migrate import migrate
from service.local.postgres import LocalPostgres


def dsn_for(server_dsn: str, name: str) -> str:
    """Return the DSN of database `name` on the server of `server_dsn`."""
    return make_dsn(server_dsn, dbname=name)


def sql(dsn: str, statement: str, params=None, *, autocommit: bool = False):
    """Run one statement and return its rows (if any)."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = autocommit
    try:
        with conn.cursor() as cursor:
            cursor.execute(statement, params)
            rows = cursor.fetchall() if cursor.description else None
        if not autocommit:
            conn.commit()
        return rows
    finally:
        conn.close()


def count_deliveries(dsn: str, where: str) -> int:
    """Return how many deliveries match the SQL condition `where`."""
    return sql(dsn, f"SELECT count(*) FROM deliveries WHERE {where}")[0][0]


def fresh_database(server: LocalPostgres, name: str) -> str:
    """Create and migrate an empty database `name` (dropping any of that name); return its DSN."""
    sql(server.dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", autocommit=True)
    sql(server.dsn, f"CREATE DATABASE {name}", autocommit=True)
    dsn = dsn_for(server.dsn, name)
    migrate(dsn)
    return dsn

"""A local database seen from outside the service, one statement at a time, each on a
connection of its own.

For the local servers of `service/local/`, the tests and the benchmarks: they create
databases, look at what the service stored and set up what they measure with statements of
their own, which they pass to `sql()`.
"""

from __future__ import annotations

from typing import Any

import psycopg2
from psycopg2 import sql as compose
from psycopg2.extensions import make_dsn, parse_dsn

from db.migrate import migrate
from db.sql import QUERIES


def dsn_parts(dsn: str) -> dict[str, str]:
    """Return the parts of `dsn` (host, port, user, dbname, ...) by name."""
    return parse_dsn(dsn)


def dsn_with(dsn: str, **parts: Any) -> str:
    """Return `dsn` with the given parts (host, port, dbname, ...) replaced."""
    return make_dsn(dsn, **parts)


def dsn_for(server_dsn: str, name: str) -> str:
    """Return the DSN of database `name` on the server of `server_dsn`."""
    return dsn_with(server_dsn, dbname=name)


def sql(dsn: str, statement: Any, params=None, *, autocommit: bool = False):
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
    statement = compose.SQL(QUERIES["count_deliveries_where"]).format(
        condition=compose.SQL(where))
    return sql(dsn, statement)[0][0]


def create_database(server_dsn: str, name: str) -> str:
    """Create an empty database `name` on the server of `server_dsn`; return its DSN."""
    sql(server_dsn, _named("create_database", name), autocommit=True)
    return dsn_for(server_dsn, name)


def fresh_database(server_dsn: str, name: str) -> str:
    """Create and migrate an empty database `name` on the server of `server_dsn` (dropping any
    of that name); return its DSN."""
    sql(server_dsn, _named("drop_database", name), autocommit=True)
    dsn = create_database(server_dsn, name)
    migrate(dsn)
    return dsn


def _named(statement: str, name: str) -> compose.Composed:
    return compose.SQL(QUERIES[statement]).format(name=compose.Identifier(name))

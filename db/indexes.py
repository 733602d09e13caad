"""Find the indexes an interrupted concurrent build left INVALID, and build them again.

`CREATE INDEX CONCURRENTLY` records the index first and builds it afterwards; cancelled, cut
off or failed on the way, it leaves the index behind marked invalid: the planner never uses
it, yet every write still updates it, and `IF NOT EXISTS` takes it for done. An interrupted
`REINDEX INDEX CONCURRENTLY` leaves its new copy (`<name>_ccnew`) or its old one
(`<name>_ccold`) the same way, and an interrupted `DROP INDEX CONCURRENTLY` an index no longer
live. All of these statements run outside any transaction, on an autocommit cursor.

An index being built right now is invalid too, until its build ends: one on a table that
another session is indexing is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from psycopg2 import sql

from db.rows import as_dicts
from db.sql import QUERIES

_CREATED_IF_NOT_EXISTS = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)


def drop_if_left_invalid(cursor: Any, statement: str, report: Callable[[str], None]) -> None:
    """Drop the index `statement` creates if not there when an interrupted build left it
    invalid, so that the statement builds it again instead of taking it for done."""
    name = index_created_if_absent(statement)
    if name is None:
        return
    cursor.execute(QUERIES["index_left_invalid"], {"name": name})
    if cursor.fetchone()[0]:
        report(f"  index {name} was left invalid by an interrupted build: building it again")
        cursor.execute(_on_index(cursor, "drop_index_concurrently", sql.Identifier(name)))


def index_created_if_absent(statement: str) -> str | None:
    """Return the name of the index `statement` builds concurrently unless one of that name
    exists (`CREATE INDEX CONCURRENTLY IF NOT EXISTS name`), or None for any other statement."""
    match = _CREATED_IF_NOT_EXISTS.match(statement)
    return match.group(1) if match else None


def rebuild_invalid(cursor: Any, report: Callable[[str], None]) -> None:
    """Drop the leftovers of interrupted rebuilds and drops, and rebuild every other invalid
    index on the service's tables (those of its schema that its role owns)."""
    cursor.execute(QUERIES["invalid_indexes"])
    for index in as_dicts(cursor):
        name = f"{index['schema']}.{index['name']}"
        quoted = sql.Identifier(index["schema"], index["name"])
        if index["building"]:
            report(f"index {name} is invalid while an index build on its table is under way: "
                   "left alone")
        elif index["leftover"]:
            report(f"dropping index {name}, left over from an interrupted concurrent "
                   "rebuild or drop")
            cursor.execute(_on_index(cursor, "drop_index_concurrently", quoted))
        else:
            report(f"rebuilding invalid index {name}")
            cursor.execute(_on_index(cursor, "reindex_concurrently", quoted))


def _on_index(cursor: Any, statement: str, index: sql.Identifier) -> str:
    """Return the named statement about `index`, its name quoted in."""
    return sql.SQL(QUERIES[statement]).format(index=index).as_string(cursor)

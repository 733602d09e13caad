"""Which index a migration's concurrent statement builds unless it exists: the one `webhooks
migrate` drops first when an interrupted build left it invalid."""

from __future__ import annotations

import pytest

from db.indexes import index_created_if_absent
from db.migrate import migrations


@pytest.mark.parametrize(("statement", "name"), [
    ("CREATE INDEX CONCURRENTLY IF NOT EXISTS a_b ON t (c)", "a_b"),
    ("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS a_b ON t (c)", "a_b"),
    ("create index concurrently if not exists a_b\n    on t using gin (c)", "a_b"),
    ("\n  CREATE  INDEX\n CONCURRENTLY IF  NOT\tEXISTS a_b ON t (c)", "a_b"),
    ("CREATE INDEX CONCURRENTLY a_b ON t (c)", None),  # no IF NOT EXISTS: never skipped
    ("CREATE INDEX IF NOT EXISTS a_b ON t (c)", None),  # in a transaction: never left invalid
    ("DROP INDEX CONCURRENTLY IF EXISTS a_b", None),
    ("ALTER TABLE t VALIDATE CONSTRAINT c", None),
])
def test_the_index_a_statement_builds_unless_it_exists(statement, name):
    assert index_created_if_absent(statement) == name


def test_every_index_the_migrations_build_if_absent_is_found():
    statements = [statement for migration in migrations()
                  for statement in migration.concurrent_statements()]
    built_if_absent = [s for s in statements if "IF NOT EXISTS" in s.upper()
                       and "INDEX" in s.upper()]
    names = [index_created_if_absent(s) for s in built_if_absent]
    assert None not in names
    assert "deliveries_by_webhook_id" in names and "configs_inactive" in names

"""Apply the numbered, append-only migrations of `db/migrations/` under an advisory lock.

Each file `NNNN_name.sql` runs once, in its own transaction, and is recorded in
`schema_migrations`. Concurrent runs queue on the lock; the later ones find nothing to do.

A migration that alters a busy table waits for its lock at most LOCK_TIMEOUT, then gives
way and tries again: queued behind a long reader, it would otherwise hold up every claim,
record and ingest queued behind it, stalling the running service.

Statements that must not run in a transaction (`CREATE INDEX CONCURRENTLY`, which builds an
index on a busy table without blocking its writes) go after a line `-- concurrently --`: they
run one by one, outside the transaction, after it commits and before the migration is
recorded. Both parts must then be idempotent (`IF NOT EXISTS`): a run interrupted between
them starts the migration again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg2.errors

from db.errors import DatabaseUnavailable, translated
from db.pool import connect

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
MIGRATION_LOCK = 7_245_101  # pg_advisory_lock key shared by every `webhooks migrate`
LOCK_TIMEOUT = "5s"  # longest wait for a table lock within one try of a migration
LOCK_POLL = 0.2  # seconds between tries of the migration lock held by another run
LOCK_TRIES = 12  # tries of one migration before giving up (about a minute and a half)
_FILE_NAME = re.compile(r"^(\d{4})_(\w+)\.sql$")
CONCURRENTLY = "-- concurrently --"  # the line after which statements run outside a transaction


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    def sql(self) -> str:
        """Return the statements that run in the migration's transaction."""
        return self.path.read_text().split(CONCURRENTLY, 1)[0]

    def concurrent_statements(self) -> list[str]:
        """Return the statements that run one by one after the transaction commits."""
        parts = self.path.read_text().split(CONCURRENTLY, 1)
        if len(parts) == 1:
            return []
        code = "\n".join(line for line in parts[1].splitlines()
                         if not line.lstrip().startswith("--"))
        return [statement.strip() for statement in code.split(";") if statement.strip()]


def migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Return the migrations in order; raise on a malformed name or a reused number."""
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise ValueError(f"migration {path.name}: name it NNNN_description.sql")
        version = int(match.group(1))
        if version in found:
            raise ValueError(f"migration number {version} used twice")
        found[version] = Migration(version, match.group(2), path)
    return [found[v] for v in sorted(found)]


def migrate(dsn: str, *, report: Callable[[str], None] = lambda _: None) -> list[Migration]:
    """Apply every pending migration and return the ones this call applied."""
    conn = connect(dsn, autocommit=True, application_name="webhooks-migrate")
    applied: list[Migration] = []
    try:
        with translated(), conn.cursor() as cursor:
            _lock(cursor)
            cursor.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY,"
                " name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cursor.execute("SELECT version FROM schema_migrations")
            done = {row[0] for row in cursor.fetchall()}
            for migration in migrations():
                if migration.version in done:
                    continue
                report(f"applying {migration.path.name}")
                _apply(cursor, migration, report)
                applied.append(migration)
            cursor.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    finally:
        conn.close()
    return applied


def _lock(cursor) -> None:
    """Take the migration lock, polling: a run blocked inside `pg_advisory_lock` would hold a
    snapshot that the other run's `CREATE INDEX CONCURRENTLY` waits for (a deadlock)."""
    while True:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,))
        if cursor.fetchone()[0]:
            return
        time.sleep(LOCK_POLL)


def _apply(cursor, migration: Migration, report: Callable[[str], None]) -> None:
    """Run one migration in its own transaction, giving way to busy tables between tries."""
    for attempt in range(1, LOCK_TRIES + 1):
        cursor.execute("BEGIN")
        try:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cursor.execute(migration.sql())
            if migration.concurrent_statements():
                cursor.execute("COMMIT")
                for statement in migration.concurrent_statements():
                    cursor.execute(statement)
                cursor.execute("BEGIN")
            cursor.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            cursor.execute("COMMIT")
            return
        except psycopg2.errors.LockNotAvailable as error:
            cursor.execute("ROLLBACK")
            if attempt == LOCK_TRIES:
                raise DatabaseUnavailable(
                    f"{migration.path.name}: a table it alters stayed locked through "
                    f"{LOCK_TRIES} tries of {LOCK_TIMEOUT}; find the long transaction "
                    "(pg_stat_activity) and run `webhooks migrate` again") from error
            report(f"  {migration.path.name}: a table is busy ({error.diag.message_primary}); "
                   f"trying again ({attempt}/{LOCK_TRIES})")
            time.sleep(min(2.0, 0.25 * attempt))
        except BaseException:
            cursor.execute("ROLLBACK")
            raise


def pending(dsn: str) -> list[Migration]:
    """Return the migrations not yet applied to the database at `dsn`."""
    conn = connect(dsn, autocommit=True, application_name="webhooks-migrate")
    try:
        with translated(), conn.cursor() as cursor:
            cursor.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
            if not cursor.fetchone()[0]:
                return migrations()
            cursor.execute("SELECT version FROM schema_migrations")
            done = {row[0] for row in cursor.fetchall()}
    finally:
        conn.close()
    return [m for m in migrations() if m.version not in done]

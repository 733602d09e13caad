"""Apply the numbered, append-only migrations of `db/migrations/` under an advisory lock.

Each file `NNNN_name.sql` runs once, in its own transaction, and is recorded in
`schema_migrations`. Concurrent runs queue on the lock; the later ones find nothing to do.
The lock belongs to the session for the whole run on a direct connection; through a
transaction-mode pooler, where a session lock would stay behind on whichever server session
took it, each migration's transaction takes the lock for itself and checks again that the
migration is still to do.

A migration that alters a busy table waits for its lock at most LOCK_TIMEOUT, then gives
way and tries again: queued behind a long reader, it would otherwise hold up every claim,
record and ingest queued behind it, stalling the running service. The timeout is shorter
than PostgreSQL's deadlock timeout (1 s by default), so that when a migration holding one
table's lock waits for another's held by a transaction of the service that waits for the
first, the migration gives way before either is chosen to fail; a deadlock reported all the
same (a server whose deadlock timeout is shorter) makes it give way too. An autovacuum in the
way (it holds a lock that conflicts with any schema change, for minutes on a large table)
is cancelled by PostgreSQL only for a lock waited for longer than the deadlock timeout: when
a try gave way while one runs, the next waits that long, a pause of about a second for the
statements queued behind it, instead of giving way to the autovacuum until the tries run out.

Statements that must not run in a transaction (`CREATE INDEX CONCURRENTLY`, which builds an
index on a busy table without blocking its writes) go after a line `-- concurrently --`: they
run one by one, outside the transaction, after it commits and before the migration is
recorded. Both parts must then be idempotent (`IF NOT EXISTS`): a run interrupted between
them starts the migration again, and so, through a pooler, may another run while the first
builds the indexes outside the lock (the run that records the migration is the one that
applied it). An index whose concurrent build was interrupted is left
behind INVALID, which `IF NOT EXISTS` would take for done: it is dropped and built again
(`db/indexes.py`). At the end of every run, any other invalid index on the service's tables
is rebuilt, and what interrupted concurrent rebuilds left behind is dropped.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg2.errors

from db.errors import DatabaseUnavailable, translated
from db.indexes import drop_if_left_invalid, rebuild_invalid
from db.pool import Pooler, connect
from db.sql import QUERIES

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
LOCK_TIMEOUT = "200ms"  # longest wait for a table lock within one try of a migration
LOCK_POLL = 0.2  # seconds between tries of the migration lock held by another run
LOCK_TRIES = 60  # tries of one migration before giving up (about two minutes)
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


def migrate(dsn: str, *, report: Callable[[str], None] = lambda _: None,
            pooler: Pooler = Pooler.AUTO, up_to: int | None = None,
            directory: Path = MIGRATIONS_DIR, lock_timeout: str | None = None) -> list[Migration]:
    """Apply every pending migration of `directory` (those numbered up to `up_to` only, when
    given: a database as an older release left it), then rebuild any invalid index; return
    the migrations this call applied. `lock_timeout` replaces LOCK_TIMEOUT (a benchmark
    compares them)."""
    conn = connect(dsn, autocommit=True, application_name="webhooks-migrate", pooler=pooler)
    applied: list[Migration] = []
    try:
        with translated(), conn.cursor() as cursor:
            run = _Run(cursor, per_transaction=conn.pooled,
                       lock_timeout=lock_timeout or LOCK_TIMEOUT)
            run.lock_session()
            run.begin()
            cursor.execute(QUERIES["create_migrations_table"])
            cursor.execute("COMMIT")
            for migration in migrations(directory):
                if up_to is not None and migration.version > up_to:
                    break
                if run.apply(migration, report):
                    applied.append(migration)
            rebuild_invalid(cursor, report)
            run.unlock_session()
    finally:
        conn.close()
    return applied


class _Run:
    """One run's transactions on one autocommit cursor, under the migration lock: the
    session's for the whole run, or each transaction's (`per_transaction`)."""

    def __init__(self, cursor, *, per_transaction: bool, lock_timeout: str) -> None:
        self.cursor = cursor
        self.per_transaction = per_transaction
        self.lock_timeout = lock_timeout

    def lock_session(self) -> None:
        """Take the session's lock, polling: a run blocked inside `pg_advisory_lock` would
        hold a snapshot that the other run's `CREATE INDEX CONCURRENTLY` waits for (a
        deadlock)."""
        while not self.per_transaction:
            self.cursor.execute(QUERIES["try_migration_lock"])
            if self.cursor.fetchone()[0]:
                return
            time.sleep(LOCK_POLL)

    def unlock_session(self) -> None:
        if not self.per_transaction:
            self.cursor.execute(QUERIES["release_migration_lock"])

    def begin(self) -> None:
        """Begin a transaction that holds the migration lock."""
        if not self.per_transaction:
            self.cursor.execute("BEGIN")
            return
        while True:
            self.cursor.execute("BEGIN")
            self.cursor.execute(QUERIES["try_migration_lock_for_transaction"])
            if self.cursor.fetchone()[0]:
                return
            self.cursor.execute("ROLLBACK")  # no snapshot held while the other run goes on
            time.sleep(LOCK_POLL)

    def apply(self, migration: Migration, report: Callable[[str], None]) -> bool:
        """Run one migration in its own transaction unless it is recorded already, giving way
        to busy tables between tries; return True if this run applied it."""
        cursor = self.cursor
        timeout = self.lock_timeout
        for attempt in range(1, LOCK_TRIES + 1):
            self.begin()
            try:
                cursor.execute(QUERIES["migration_applied"], {"version": migration.version})
                if cursor.fetchone()[0]:
                    cursor.execute("COMMIT")
                    return False
                if attempt == 1:
                    report(f"applying {migration.path.name}")
                cursor.execute(QUERIES["limit_lock_waits"], {"timeout": timeout})
                cursor.execute(migration.sql())
                if migration.concurrent_statements():
                    cursor.execute("COMMIT")
                    for statement in migration.concurrent_statements():
                        drop_if_left_invalid(cursor, statement, report)
                        cursor.execute(statement)
                    cursor.execute("BEGIN")
                cursor.execute(QUERIES["record_migration"],
                               {"version": migration.version, "name": migration.name})
                recorded = cursor.fetchone() is not None
                cursor.execute("COMMIT")
                return recorded
            except (psycopg2.errors.LockNotAvailable, psycopg2.errors.DeadlockDetected) as error:
                # A busy table; or a deadlock: with a transaction of the service, on a server
                # whose deadlock timeout is shorter than the lock timeout, or, through a pooler,
                # with another run that applies this migration's transaction again while this
                # one builds its indexes concurrently outside the lock (its ALTER waits for the
                # build, which waits for its transaction). Either way, start it again.
                cursor.execute("ROLLBACK")
                if attempt == LOCK_TRIES:
                    raise DatabaseUnavailable(
                        f"{migration.path.name}: a table it alters stayed locked through "
                        f"{LOCK_TRIES} tries of {self.lock_timeout}; find the long transaction "
                        "(pg_stat_activity) and run `webhooks migrate` again") from error
                timeout, why = self._next_timeout()
                report(f"  {migration.path.name}: a table is busy "
                       f"({error.diag.message_primary}){why}; trying again "
                       f"({attempt}/{LOCK_TRIES})")
                time.sleep(min(2.0, 0.25 * attempt))
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
        raise AssertionError("not reached")

    def _next_timeout(self) -> tuple[str, str]:
        """Return the lock timeout of the next try, and why when it is not the usual one."""
        self.cursor.execute(QUERIES["autovacuum_in_the_way"])
        autovacuum, outlasting = self.cursor.fetchone()
        if not autovacuum:
            return self.lock_timeout, ""
        return outlasting, (f"; an autovacuum runs: the next try waits {outlasting}, past the"
                            " deadlock timeout, so that PostgreSQL cancels it")

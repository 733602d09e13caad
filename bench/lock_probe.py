"""How long a schema change makes the service's statements wait, table by table.

Two views, both while the change runs:

- **the load**: greenlets, each on its own connection, run what a worker and a publisher run
  on the busy tables, over and over: a claim (`SELECT … FOR UPDATE SKIP LOCKED LIMIT 1` on
  `deliveries`, then marking it `delivering`), a record (an insert into `delivery_attempts`,
  the delivery's move to `succeeded`), a publish (a share lock on the config, an insert into
  `events` and one into `deliveries`), the plain reads of a listing, and, when asked, a long
  reader (a report, a slow query, a retention batch: a transaction that keeps a lock on
  `deliveries` for `long_read` seconds, one every LONG_READ_EVERY). Each statement is
  timed; the longest per table is what a caller felt (its lock wait plus its own work, which
  the same load measured before the change tells apart). Every statement waits at most
  LOCK_TIMEOUT, so a probe never hangs; one that gives up counts as that long.
- **the lock table**: a monitor reads `pg_locks` every POLL seconds: each session waiting for
  a table lock (since `waitstart`) and whom it waits for; and each lock the change's session
  holds that blocks writes (SHARE and stronger), and since when it was seen.

The load writes rows of the tenant `default` once the tables have a tenant column, and rows
without one before (a database of the release before tenants).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import gevent
import psycopg2
import psycopg2.errors

from db.scope import DEFAULT_TENANT_ID

LOCK_TIMEOUT = "60s"  # the longest a probe statement waits for a lock before it gives up
GIVE_UP_SECONDS = 60.0
POLL = 0.01  # seconds between two reads of pg_locks
IDLE = 0.005  # seconds a probe rests when it found nothing to do
PUBLISH_PAUSE = 0.01  # seconds between two publishes (about 100 events/s at most)
READ_PAUSE = 0.05  # seconds between two listing reads
LONG_READ_EVERY = 4.0  # seconds from the start of one long read to the next
TABLES = ("deliveries", "events", "delivery_attempts", "configs")
# Table lock modes that block inserts, updates and deletes (they conflict with ROW EXCLUSIVE).
BLOCKS_WRITES = ("ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock")
CONFIG = "probe"  # the config the load publishes to and dispatches for

_WAITING = """
SELECT l.relation::regclass::text, l.pid, l.mode, extract(epoch FROM now() - l.waitstart),
       a.application_name, left(a.query, 300),
       (SELECT string_agg(b.application_name || ': ' || left(b.query, 300), ' | ')
        FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(l.pid)))
FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE NOT l.granted AND l.locktype = 'relation' AND l.waitstart IS NOT NULL
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""
_HELD = """
SELECT l.relation::regclass::text, l.mode, l.virtualtransaction, left(a.query, 300)
FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE l.granted AND l.locktype = 'relation' AND a.application_name = %(holder)s
  AND l.mode = ANY (%(modes)s)
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


@dataclass
class Worst:
    """The longest time seen, and what it was."""

    seconds: float = 0.0
    what: str = ""

    def see(self, seconds: float, what: str) -> None:
        if seconds > self.seconds:
            self.seconds, self.what = seconds, what

    def as_dict(self) -> dict:
        return {"seconds": round(self.seconds, 3), "what": self.what}


@dataclass
class Window:
    """What one stretch of time showed: per table, the longest probe statement, the longest
    lock wait of any session but the change's, and the longest write-blocking lock the
    change held; the change's own longest wait; how many statements each probe ran."""

    statements: dict[str, Worst] = field(default_factory=lambda: {t: Worst() for t in TABLES})
    waits: dict[str, Worst] = field(default_factory=lambda: {t: Worst() for t in TABLES})
    held: dict[str, Worst] = field(default_factory=lambda: {t: Worst() for t in TABLES})
    change_waited: Worst = field(default_factory=Worst)
    counts: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"seconds": round(self.seconds, 2),
                "statements": {t: w.as_dict() for t, w in self.statements.items()},
                "lock_waits": {t: w.as_dict() for t, w in self.waits.items()},
                "write_blocking_locks_held": {t: w.as_dict() for t, w in self.held.items()},
                "change_waited": self.change_waited.as_dict(),
                "counts": dict(self.counts), "errors": dict(self.errors)}


class Probe:
    """The load and the monitor on one database; `window()` measures a stretch of time."""

    def __init__(self, dsn: str, *, holder: str, long_read: float = 0.0) -> None:
        self.dsn = dsn
        self.holder = holder  # the application_name of the change's session
        self.long_read = long_read
        self.current = Window()
        self._serial = itertools.count()
        self._held_since: dict[tuple[str, str, str], float] = {}
        self._greenlets: list[gevent.Greenlet] = []

    def start(self) -> None:
        """Add the load's config, then start the load and the monitor."""
        conn = self._connect("bench-probe-setup")
        try:
            with conn.cursor() as cursor:
                column, value = _tenant_parts(cursor)
                cursor.execute(
                    f"INSERT INTO configs ({column}id, name, endpoint, secret, event_types)"
                    f" VALUES ({value}%s, 'probe', 'https://probe.example/hook',"
                    " 'whsec_probe', ARRAY['probe.event']) ON CONFLICT DO NOTHING", (CONFIG,))
            conn.commit()
        finally:
            conn.close()
        probes = [("dispatch", self._dispatch), ("publish", self._publish), ("read", self._read)]
        if self.long_read:
            probes.append(("long-read", self._long_read))
        self._greenlets = [gevent.spawn(self._loop, name, body) for name, body in probes]
        self._greenlets.append(gevent.spawn(self._monitor))

    def stop(self) -> None:
        gevent.killall(self._greenlets)

    def window(self, body: Callable[[], object]) -> Window:
        """Run `body` and return what the load and the monitor saw meanwhile."""
        self.current = window = Window()
        started = time.monotonic()
        body()
        window.seconds = time.monotonic() - started
        self.current = Window()  # what runs on is counted nowhere
        return window

    def _connect(self, name: str):
        conn = psycopg2.connect(self.dsn, application_name=name)
        with conn.cursor() as cursor:
            cursor.execute("SET lock_timeout = %s", (LOCK_TIMEOUT,))
        conn.commit()
        return conn

    def _loop(self, name: str, body: Callable) -> None:
        """Run one probe's statements until killed, counting what it did and what failed."""
        conn = self._connect(f"bench-probe-{name}")
        try:
            with conn.cursor() as cursor:
                tenant = _tenant_parts(cursor)
            conn.commit()
            while True:
                try:
                    with conn.cursor() as cursor:
                        rest = body(cursor, tenant)
                    conn.commit()
                    counts = self.current.counts
                    counts[name] = counts.get(name, 0) + 1
                except psycopg2.Error as error:
                    conn.rollback()
                    errors = self.current.errors
                    kind = f"{name}: {type(error).__name__}"
                    errors[kind] = errors.get(kind, 0) + 1
                    if isinstance(error, psycopg2.errors.UndefinedColumn | psycopg2.errors
                                  .NotNullViolation):
                        with conn.cursor() as cursor:  # the tenant column came (or went)
                            tenant = _tenant_parts(cursor)
                        conn.commit()
                    rest = IDLE
                gevent.sleep(rest)  # outside any transaction: the probe holds no lock
        finally:
            conn.close()

    def _timed(self, cursor, table: str, label: str, statement: str, params=()) -> None:
        """Run one statement, keeping its time against `table` (its full wait if it gives up
        or fails)."""
        started = time.monotonic()
        try:
            cursor.execute(statement, params)
        finally:
            seconds = time.monotonic() - started
            self.current.statements[table].see(seconds, label)

    def _dispatch(self, cursor, tenant: tuple[str, str]) -> float:
        """Claim the next due delivery, then record an attempt of it (two transactions);
        return the rest before the next claim (none after one, a little when none was due)."""
        self._timed(cursor, "deliveries", "claim (FOR UPDATE SKIP LOCKED)",
                    "SELECT id FROM deliveries WHERE status = 'pending'"
                    " AND next_attempt_at <= now() ORDER BY next_attempt_at"
                    " LIMIT 1 FOR UPDATE SKIP LOCKED")
        row = cursor.fetchone()
        if row is None:
            return IDLE
        (delivery,) = row
        self._timed(cursor, "deliveries", "mark delivering (UPDATE)",
                    "UPDATE deliveries SET status = 'delivering', claimed_at = now(),"
                    " claim_token = gen_random_uuid(), updated_at = now()"
                    " WHERE id = %s AND status = 'pending'", (delivery,))
        cursor.connection.commit()
        column, value = tenant
        self._timed(cursor, "delivery_attempts", "record an attempt (INSERT)",
                    f"INSERT INTO delivery_attempts ({column}delivery_id, attempt_number,"
                    " replay_generation, endpoint, outcome, status_code, duration_ms)"
                    f" VALUES ({value}%s, 1, 0, 'https://probe.example/hook', 'success',"
                    " 200, 1)", (delivery,))
        self._timed(cursor, "deliveries", "settle (UPDATE)",
                    "UPDATE deliveries SET status = 'succeeded', attempt_count = 1,"
                    " last_status_code = 200, claimed_at = NULL, claim_token = NULL,"
                    " updated_at = now()"
                    " WHERE id = %s AND status = 'delivering'", (delivery,))
        return 0.0

    def _publish(self, cursor, tenant: tuple[str, str]) -> float:
        """Store one event and its delivery, the config share-locked first, as an ingest."""
        column, value = tenant
        event = f"probe-{time.time_ns()}-{next(self._serial)}"
        self._timed(cursor, "configs", "ingest's share lock (SELECT … FOR SHARE)",
                    "SELECT id FROM configs WHERE id = %s FOR SHARE", (CONFIG,))
        self._timed(cursor, "events", "publish (INSERT)",
                    f"INSERT INTO events ({column}id, type, payload, occurred_at, source)"
                    f" VALUES ({value}%s, 'probe.event', '{{}}', now(), 'api')", (event,))
        self._timed(cursor, "deliveries", "publish (INSERT)",
                    f"INSERT INTO deliveries ({column}event_id, config_id, event_type,"
                    f" next_attempt_at) VALUES ({value}%s, %s, 'probe.event', now())",
                    (event, CONFIG))
        return PUBLISH_PAUSE

    def _read(self, cursor, tenant: tuple[str, str]) -> float:
        """Read a listing's page of deliveries and the configs, as the API does."""
        self._timed(cursor, "deliveries", "listing (SELECT)",
                    "SELECT id, status FROM deliveries ORDER BY id DESC LIMIT 20")
        self._timed(cursor, "configs", "listing (SELECT)",
                    "SELECT id, name FROM configs ORDER BY id LIMIT 20")
        return READ_PAUSE

    def _long_read(self, cursor, tenant: tuple[str, str]) -> float:
        """Read deliveries, then keep the transaction (and its lock) open a while."""
        self._timed(cursor, "deliveries", "long reader (SELECT)",
                    "SELECT id FROM deliveries ORDER BY id LIMIT 1")
        gevent.sleep(self.long_read)
        return max(0.0, LONG_READ_EVERY - self.long_read)

    def _monitor(self) -> None:
        conn = psycopg2.connect(self.dsn, application_name="bench-probe-monitor")
        conn.autocommit = True
        try:
            with conn.cursor() as cursor:
                while True:
                    self._look(cursor)
                    gevent.sleep(POLL)
        finally:
            conn.close()

    def _look(self, cursor) -> None:
        window = self.current
        cursor.execute(_WAITING)
        for table, _, mode, seconds, waiter, query, blockers in cursor.fetchall():
            what = f"{waiter} wants {mode}: {query} -- blocked by {blockers}"
            if waiter == self.holder:
                window.change_waited.see(float(seconds), f"on {table}: {what}")
            elif table in window.waits:
                window.waits[table].see(float(seconds), what)
        now = time.monotonic()
        cursor.execute(_HELD, {"holder": self.holder, "modes": list(BLOCKS_WRITES)})
        seen = set()
        for table, mode, transaction, query in cursor.fetchall():
            key = (table, mode, transaction)
            seen.add(key)
            since = self._held_since.setdefault(key, now)
            if table in window.held:
                window.held[table].see(now - since, f"{mode}: {query}")
        for key in set(self._held_since) - seen:
            del self._held_since[key]


def _tenant_parts(cursor) -> tuple[str, str]:
    """Return the column list's and the values' start: the default tenant where the tables
    have a tenant column, nothing before."""
    cursor.execute("SELECT EXISTS (SELECT FROM information_schema.columns"
                   " WHERE table_schema = current_schema() AND table_name = 'deliveries'"
                   " AND column_name = 'tenant_id')")
    if cursor.fetchone()[0]:
        return "tenant_id, ", f"{DEFAULT_TENANT_ID}, "
    return "", ""

"""Fill a migrated database with months of delivery history, set-based and fast.

The shape of a busy deployment at steady state under the default retention (succeeded kept
30 days, failed and cancelled 90): every one of the last 31 days holds the same volume of
deliveries in every state (one day more than retention keeps, so a retention pass has a day
to delete), and the 60 days before hold only that volume's failures and cancellations. Each
event fans out to two configs chosen with a heavy skew (a few configs get most traffic);
succeeded deliveries took 1 to 4 attempts, failed ones 10, cancelled ones 2; pending ones are
recent and due later (the dispatcher leaves them alone during the measurements).

Secondary indexes and the foreign and unique keys are dropped during the load and rebuilt
after it (as a restore would), then the tables are vacuumed and analysed. A database of the
release before tenants (no tenant columns) is filled the same way, without them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg2

from db.scope import DEFAULT_TENANT_ID

SUCCEEDED_DAYS = 30  # the default retention of succeeded deliveries
FINISHED_DAYS = 90  # the default retention of failed and cancelled deliveries
FINISHED_SHARE = 0.04  # failed + cancelled among a day's deliveries
CONFIGS = 50
EVENT_TYPES = 20
HISTORY_PREFIX = "h"  # event ids of the history: h<number>
TABLES = ("events", "deliveries", "delivery_attempts")

# Every delivery is numbered g (0 ≤ g < total) in creation order; the first `old` are the
# failures older than the succeeded retention. `h` is a well-mixed hash of g in [0, 10000).
_DELIVERIES = """
WITH numbered AS (
    SELECT g, (g::bigint * 2654435761 %% 4294967296) %% 10000 AS h,
           CASE WHEN g < %(old)s
                THEN now() - make_interval(days => %(finished_days)s + 1)
                     + (g::float8 / greatest(%(old)s, 1))
                       * make_interval(days => %(finished_days)s - %(succeeded_days)s)
                ELSE now() - make_interval(days => %(succeeded_days)s + 1)
                     + ((g - %(old)s)::float8 / greatest(%(total)s - %(old)s, 1))
                       * make_interval(days => %(succeeded_days)s + 1)
                     - interval '1 minute'
           END AS created_at
    FROM generate_series(%(low)s::bigint, %(high)s::bigint - 1) g
),
shaped AS (
    SELECT g, h, created_at,
           CASE WHEN g < %(old)s THEN CASE WHEN h < 7500 THEN 'failed' ELSE 'cancelled' END
                WHEN h < %(failed_below)s THEN 'failed'
                WHEN h < %(finished_below)s THEN 'cancelled'
                WHEN h < %(finished_below)s + 300 AND created_at > now() - interval '1 day'
                    THEN 'pending'
                ELSE 'succeeded'
           END AS status,
           -- The event's first config is skewed towards config 0; its second differs from it.
           floor(%(configs)s * power(((g / 2) * 40503 %% 65536) / 65536.0, 3))::int AS first_config
    FROM numbered
),
rows AS (
    SELECT g, h, created_at, status,
           CASE WHEN g %% 2 = 0 THEN first_config
                ELSE (first_config + 1 + (g / 2) %% (%(configs)s - 1)) %% %(configs)s
           END AS config,
           CASE status WHEN 'failed' THEN 10 WHEN 'cancelled' THEN 2
                       WHEN 'pending' THEN 1 + h %% 3 ELSE 1 + (h / 7) %% 4 END AS attempts
    FROM shaped
),
new_events AS (
    INSERT INTO events ({tenant_column}id, type, payload, occurred_at, source, created_at)
    SELECT {tenant}%(prefix)s || (g / 2), 'type.' || ((g / 2) %% %(event_types)s),
           json_build_object('id', g / 2, 'amount', (g / 2) %% 10000, 'currency', 'EUR',
                             'note', repeat('x', 100)),
           created_at, 'kafka', created_at
    FROM rows WHERE g %% 2 = 0
)
INSERT INTO deliveries ({tenant_column}id, event_id, config_id, event_type, status, attempt_count,
                        generation_started_at, next_attempt_at, last_status_code, last_error,
                        created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT {tenant}%(base)s + g + 1, %(prefix)s || (g / 2), 'history-' || config,
       'type.' || ((g / 2) %% %(event_types)s),
       status, attempts, created_at,
       CASE WHEN status = 'pending' THEN now() + make_interval(hours => (1 + h %% 6)::int) END,
       CASE WHEN status = 'succeeded' THEN 200 WHEN h %% 3 = 0 THEN 0 ELSE 503 END,
       CASE WHEN status = 'succeeded' THEN NULL WHEN h %% 3 = 0 THEN 'timed out after 30s'
            ELSE 'HTTP 503' END,
       created_at, created_at + (attempts - 1) * interval '5 minutes' + interval '1 second'
FROM rows
"""

_ATTEMPTS = """
INSERT INTO delivery_attempts ({tenant_column}delivery_id, attempt_number, replay_generation,
                               endpoint, outcome, status_code, duration_ms, response_excerpt,
                               error, created_at)
SELECT {tenant}d.id, k, 0, 'https://hooks.example.com/' || d.config_id,
       CASE WHEN d.status = 'succeeded' AND k = d.attempt_count THEN 'success'
            WHEN (d.id + k) %% 3 = 0 THEN 'timeout' ELSE 'http_error' END,
       CASE WHEN d.status = 'succeeded' AND k = d.attempt_count THEN 200
            WHEN (d.id + k) %% 3 = 0 THEN 0 ELSE 503 END,
       20 + (d.id * 7 + k) %% 400,
       CASE WHEN d.status = 'succeeded' AND k = d.attempt_count THEN '{{"ok":true}}'
            WHEN (d.id + k) %% 3 = 0 THEN NULL ELSE 'Service Unavailable' END,
       CASE WHEN d.status <> 'succeeded' AND (d.id + k) %% 3 = 0
            THEN 'timed out after 30s' END,
       d.created_at + (k - 1) * interval '5 minutes'
FROM deliveries d, generate_series(1, d.attempt_count) k
WHERE d.id > %(base)s + %(low)s AND d.id <= %(base)s + %(high)s
"""


@dataclass(frozen=True)
class Plan:
    """How many deliveries go where: `old` failures before the succeeded retention, `total`."""

    total: int

    @property
    def per_recent_day(self) -> float:
        days = SUCCEEDED_DAYS + 1 + FINISHED_SHARE * (FINISHED_DAYS - SUCCEEDED_DAYS)
        return self.total / days

    @property
    def old(self) -> int:
        old = round(self.per_recent_day * FINISHED_SHARE * (FINISHED_DAYS - SUCCEEDED_DAYS))
        return old - old % 2  # events fan out in pairs


def fill(dsn: str, total: int, *, progress: Callable[[str], None],
         chunk: int | None = None) -> dict:
    """Load `total` history deliveries (an even number) with their events and attempts."""
    total -= total % 2
    plan = Plan(total)
    chunk = chunk or max(10_000, 2 * math.ceil(total / 200))
    chunk += chunk % 2
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    started = time.monotonic()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '1GB'")
            tenant = _tenant_parts(cursor)
            cursor.execute(
                "INSERT INTO configs ({tenant_column}id, name, endpoint, secret, event_types)"
                " SELECT {tenant}'history-' || c, 'history ' || c,"
                " 'https://hooks.example.com/' || c, 'whsec_history',"
                " ARRAY(SELECT 'type.' || t FROM generate_series(0, %s) t)"
                " FROM generate_series(0, %s) c ON CONFLICT DO NOTHING".format(**tenant),
                (EVENT_TYPES - 1, CONFIGS - 1))
            dropped = _drop_keys_and_indexes(cursor)
            cursor.execute("SELECT coalesce(max(id), 0) FROM deliveries")
            (base,) = cursor.fetchone()  # ids go on after any deliveries already there
            progress(f"fill: {total:,} deliveries in chunks of {chunk:,} "
                     f"({plan.old:,} failures older than {SUCCEEDED_DAYS} days)")
            attempts = 0
            for low in range(0, total, chunk):
                high = min(total, low + chunk)
                cursor.execute(_DELIVERIES.format(**tenant),
                               {**_parameters(plan, low, high), "base": base})
                cursor.execute(_ATTEMPTS.format(**tenant),
                               {"low": low, "high": high, "base": base})
                attempts += cursor.rowcount
                elapsed = time.monotonic() - started
                progress(f"  {high:>12,} deliveries {attempts:>12,} attempts  "
                         f"{elapsed:6.0f}s  ({high / elapsed:,.0f} deliveries/s)")
            cursor.execute("SELECT setval(pg_get_serial_sequence('deliveries', 'id'),"
                           " (SELECT max(id) FROM deliveries))")
            loaded = time.monotonic() - started
            progress("fill: rebuilding keys and indexes ...")
            _restore(cursor, dropped, progress)
            indexed = time.monotonic() - started - loaded
            progress("fill: vacuum analyse ...")
            for table in TABLES:
                cursor.execute(f"VACUUM (ANALYZE) {table}")
    finally:
        conn.close()
    return {"deliveries": total, "attempts": attempts, "load_seconds": round(loaded, 1),
            "index_seconds": round(indexed, 1),
            "seconds": round(time.monotonic() - started, 1)}


def _tenant_parts(cursor) -> dict[str, str]:
    """Return what the statements write of the tenant: the default tenant's id where the
    tables have a tenant column, nothing in a database of the release before tenants."""
    cursor.execute("SELECT EXISTS (SELECT FROM information_schema.columns"
                   " WHERE table_schema = current_schema() AND table_name = 'configs'"
                   " AND column_name = 'tenant_id')")
    if cursor.fetchone()[0]:
        return {"tenant_column": "tenant_id, ", "tenant": f"{DEFAULT_TENANT_ID}, "}
    return {"tenant_column": "", "tenant": ""}


def _parameters(plan: Plan, low: int, high: int) -> dict:
    failed_below = round(10000 * FINISHED_SHARE * 0.75)
    return {"low": low, "high": high, "old": plan.old, "total": plan.total,
            "finished_days": FINISHED_DAYS, "succeeded_days": SUCCEEDED_DAYS,
            "failed_below": failed_below, "finished_below": round(10000 * FINISHED_SHARE),
            "configs": CONFIGS, "event_types": EVENT_TYPES, "prefix": HISTORY_PREFIX}


def _drop_keys_and_indexes(cursor) -> list[tuple[str, str]]:
    """Drop the foreign keys, unique keys and secondary indexes of the history tables.

    Return (kind, SQL to restore) in the order to run it: unique keys and indexes, then
    foreign keys.
    """
    cursor.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype"
        " FROM pg_constraint WHERE conrelid = ANY(%s::regclass[]) AND contype IN ('f', 'u')"
        " ORDER BY contype = 'u'", (list(TABLES),))
    constraints = cursor.fetchall()
    for table, name, _, _ in constraints:
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    cursor.execute(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index"
        " WHERE indrelid = ANY(%s::regclass[]) AND NOT indisprimary", (list(TABLES),))
    indexes = cursor.fetchall()
    for name, _ in indexes:
        cursor.execute(f"DROP INDEX {name}")
    restore = [("unique key", f"ALTER TABLE {t} ADD CONSTRAINT {n} {d}")
               for t, n, d, kind in constraints if kind == "u"]
    restore += [("index", definition) for _, definition in indexes]
    restore += [("foreign key", f"ALTER TABLE {t} ADD CONSTRAINT {n} {d}")
                for t, n, d, kind in constraints if kind == "f"]
    return restore


def _restore(cursor, dropped: list[tuple[str, str]], progress: Callable[[str], None]) -> None:
    for kind, statement in dropped:
        started = time.monotonic()
        cursor.execute(statement)
        progress(f"  {kind}: {statement[:90]} ({time.monotonic() - started:.1f}s)")

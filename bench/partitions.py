"""`python -m bench.partitions`: batched deletes against daily partitions, for retention.

Builds two copies of the same history (ROWS deliveries over 91 days, three attempts each):
one as today's plain tables, one with deliveries and attempts partitioned by day of
creation. Then measures on both what retention and dispatch do to them:

- removing the oldest day (plain: batched DELETEs as `db/retention.py` runs them;
  partitioned: DETACH … CONCURRENTLY then DROP of that day's two partitions);
- the dispatcher's writes: batches of 100 updates by delivery id, as `record_attempts`
  makes them (a partitioned table cannot find a row by id alone without asking every
  partition);
- reading one delivery by id with its attempts, as the API does.

Prints a table; `--rows 20000` is a quick look.
"""

from __future__ import annotations

import argparse
import random
import time

import psycopg2

from db.adhoc import fresh_database
from service.local.postgres import temporary_postgres

DAYS = 91

_SCHEMA = """
CREATE TABLE plain_deliveries (
    id bigint PRIMARY KEY, created_at timestamptz NOT NULL, status text NOT NULL,
    attempt_count integer NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX plain_deliveries_age ON plain_deliveries (updated_at) WHERE status = 'succeeded';
CREATE TABLE plain_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES plain_deliveries (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL, outcome text NOT NULL);
CREATE INDEX plain_attempts_by_delivery ON plain_attempts (delivery_id, id);
-- Partitioned: every key must hold the partition key, so (id) alone is no longer unique.
CREATE TABLE part_deliveries (
    id bigint NOT NULL, created_at timestamptz NOT NULL, status text NOT NULL,
    attempt_count integer NOT NULL, updated_at timestamptz NOT NULL,
    PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE INDEX part_deliveries_id ON part_deliveries (id);
CREATE TABLE part_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY, delivery_id bigint NOT NULL,
    delivery_created_at timestamptz NOT NULL, created_at timestamptz NOT NULL,
    outcome text NOT NULL) PARTITION BY RANGE (delivery_created_at);
CREATE INDEX part_attempts_by_delivery ON part_attempts (delivery_id, id);
"""


def _build(cursor, rows: int, progress) -> None:
    cursor.execute("DROP TABLE IF EXISTS plain_attempts, plain_deliveries, part_attempts,"
                   " part_deliveries")
    cursor.execute(_SCHEMA)
    start = "date_trunc('day', now()) - make_interval(days => %s)"
    for day in range(DAYS, -1, -1):
        for table in ("deliveries", "attempts"):
            cursor.execute(
                f"CREATE TABLE part_{table}_{day} PARTITION OF part_{table} FOR VALUES FROM"
                f" ({start}) TO ({start} + interval '1 day')", (day, day))
    cursor.execute(
        "INSERT INTO plain_deliveries SELECT g, now() - (g::float8 / %s) * interval '91 days',"
        " 'succeeded', 3, now() - (g::float8 / %s) * interval '91 days'"
        " FROM generate_series(1, %s) g", (rows, rows, rows))
    cursor.execute("INSERT INTO plain_attempts (delivery_id, created_at, outcome)"
                   " SELECT id, created_at, 'success' FROM plain_deliveries,"
                   " generate_series(1, 3)")
    cursor.execute("INSERT INTO part_deliveries SELECT * FROM plain_deliveries")
    cursor.execute("INSERT INTO part_attempts (delivery_id, delivery_created_at, created_at,"
                   " outcome) SELECT d.id, d.created_at, a.created_at, a.outcome"
                   " FROM plain_attempts a JOIN plain_deliveries d ON d.id = a.delivery_id")
    for table in ("plain_deliveries", "plain_attempts", "part_deliveries", "part_attempts"):
        cursor.execute(f"VACUUM ANALYZE {table}")
    progress(f"built {rows:,} deliveries and {3 * rows:,} attempts in each layout")


def _timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure(dsn: str, rows: int, progress) -> dict:
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    results: dict = {"rows": rows}
    with conn.cursor() as cursor:
        _build(cursor, rows, progress)
        ids = [random.randint(1, rows) for _ in range(2_000)]
        for layout in ("plain", "part"):
            batches = [ids[n:n + 100] for n in range(0, len(ids), 100)]

            def update(layout=layout, batches=batches):
                for batch in batches:
                    cursor.execute(f"UPDATE {layout}_deliveries SET attempt_count ="
                                   " attempt_count + 1, updated_at = now()"
                                   " WHERE id = ANY(%s)", (batch,))

            seconds = _timed(update)
            results[f"{layout}_updates_per_second"] = round(len(ids) / seconds, 1)

            def read(layout=layout):
                for delivery in ids[:500]:
                    cursor.execute(f"SELECT * FROM {layout}_deliveries WHERE id = %s",
                                   (delivery,))
                    cursor.fetchall()
                    cursor.execute(f"SELECT * FROM {layout}_attempts WHERE delivery_id = %s"
                                   " ORDER BY id", (delivery,))
                    cursor.fetchall()

            results[f"{layout}_read_ms"] = round(_timed(read) / 500 * 1000, 3)
        cursor.execute("SELECT count(*) FROM plain_deliveries"
                       " WHERE created_at < date_trunc('day', now()) - interval '90 days'")
        (day_rows,) = cursor.fetchone()

        def delete_day():
            while True:
                cursor.execute(
                    "DELETE FROM plain_deliveries WHERE id IN (SELECT id FROM plain_deliveries"
                    " WHERE status = 'succeeded' AND updated_at < date_trunc('day', now())"
                    " - interval '90 days' ORDER BY updated_at LIMIT 1000)")
                if cursor.rowcount < 1000:
                    return

        results["plain_day_seconds"] = round(_timed(delete_day), 3)

        def drop_day():
            for table in ("attempts", "deliveries"):
                cursor.execute(f"ALTER TABLE part_{table} DETACH PARTITION"
                               f" part_{table}_{DAYS} CONCURRENTLY")
                cursor.execute(f"DROP TABLE part_{table}_{DAYS}")

        results["part_day_seconds"] = round(_timed(drop_day), 3)
        results["day_deliveries"] = day_rows
        cursor.execute("DROP TABLE plain_attempts, plain_deliveries, part_attempts,"
                       " part_deliveries")
    conn.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.partitions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="deliveries per layout")
    options = parser.parse_args()

    def progress(text: str) -> None:
        print(text, flush=True)

    with temporary_postgres(fast_unsafe=False) as pg:
        dsn = fresh_database(pg.dsn, "partitions")
        found = measure(dsn, options.rows, progress)
    print(f"{'':44} {'plain':>12} {'partitioned':>12}")
    print(f"{'remove the oldest day, seconds':<44} {found['plain_day_seconds']:>12}"
          f" {found['part_day_seconds']:>12}   ({found['day_deliveries']:,} deliveries)")
    print(f"{'updates by id, per second (batches of 100)':<44}"
          f" {found['plain_updates_per_second']:>12,.0f}"
          f" {found['part_updates_per_second']:>12,.0f}")
    print(f"{'one delivery + its attempts by id, ms':<44} {found['plain_read_ms']:>12}"
          f" {found['part_read_ms']:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

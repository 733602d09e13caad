"""Time the dashboard's queries on a large table: `python -m bench.dashboard_queries`.

Fills an embedded PostgreSQL with N deliveries (one attempt each, a tenth failed, spread over
20 configs, 5 event types and 7 days), then times each listing, count and chart query the
dashboard sends, through the same `db/` functions, and prints milliseconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bench import environment as env
from db import inspection
from db.adhoc import fresh_database, sql
from db.filters import DeliveryFilter
from db.pool import ConnectionPool
from db.scope import PLATFORM
from graphql_schema.queries import HISTORY_SCAN_LIMIT
from service.local.postgres import temporary_postgres

FILL = """
INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types)
SELECT 1, 'cfg-' || n, 'config ' || n, 'http://127.0.0.1:9/' || n, %(secret)s,
       ARRAY['type.0', 'type.1', 'type.2', 'type.3', 'type.4']
FROM generate_series(0, 19) n;
INSERT INTO events (tenant_id, id, type, payload, occurred_at, source, created_at)
SELECT 1, 'evt-' || n, 'type.' || (n %% 5), '{}', now(), 'api',
       now() - make_interval(secs => n * %(spread)s)
FROM generate_series(1, %(n)s) n;
INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, status, attempt_count,
                        next_attempt_at, last_status_code, created_at, updated_at)
SELECT 1, 'evt-' || n, 'cfg-' || (n %% 20), 'type.' || (n %% 5),
       CASE WHEN n %% 10 = 0 THEN 'failed' WHEN n %% 97 = 0 THEN 'pending' ELSE 'succeeded' END,
       1, CASE WHEN n %% 97 = 0 AND n %% 10 <> 0 THEN now() + make_interval(mins => n %% 60) END,
       CASE WHEN n %% 10 = 0 THEN 500 ELSE 200 END,
       now() - make_interval(secs => n * %(spread)s), now()
FROM generate_series(%(n)s, 1, -1) n;
INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number, replay_generation, endpoint,
                               outcome, status_code, duration_ms, created_at)
SELECT 1, id, 1, 0, 'http://127.0.0.1:9/', CASE WHEN status = 'failed' THEN 'http_error'
       ELSE 'success' END, last_status_code, 5, created_at
FROM deliveries ORDER BY id;
ANALYZE;
"""


def timed(call: Callable[[], object], repeat: int) -> float:
    """Return the median milliseconds of `repeat` calls."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with temporary_postgres(fast_unsafe=True) as pg:
        dsn = fresh_database(pg.dsn, "dashboard_bench")
        started = time.monotonic()
        print(f"filling {args.deliveries:,} deliveries ...", flush=True)
        sql(dsn, FILL, {"n": args.deliveries, "secret": env.SECRET,
                            "spread": 7 * 86400 / args.deliveries})
        print(f"filled in {time.monotonic() - started:.0f} s", flush=True)
        pool = ConnectionPool(dsn, size=2)
        day_ago = datetime.now(UTC) - timedelta(days=1)
        cases = {
            "newest page, no filter": lambda: inspection.deliveries(
                pool, PLATFORM, DeliveryFilter(), limit=51),
            "newest page, failed": lambda: inspection.deliveries(
                pool, PLATFORM, DeliveryFilter(statuses=["failed"]), limit=51),
            "newest page, 2 configs + code 500": lambda: inspection.deliveries(
                pool, PLATFORM, DeliveryFilter(config_ids=["cfg-3", "cfg-7"],
                                               last_status_codes=[500]),
                limit=51),
            "newest page, event type, last day": lambda: inspection.deliveries(
                pool, PLATFORM, DeliveryFilter(event_types=["type.2"],
                                               created_after=day_ago), limit=51),
            "due soonest, pending": lambda: inspection.deliveries(
                pool, PLATFORM, DeliveryFilter(statuses=["pending"]), limit=51,
                order=inspection.Order.DUE_SOONEST),
            "totalCount, failed (bounded, then estimate)": lambda: inspection.count(
                pool, PLATFORM, DeliveryFilter(statuses=["failed"]), bound=10_000),
            "totalCount, one config, last day": lambda: inspection.count(
                pool, PLATFORM, DeliveryFilter(config_ids=["cfg-3"], created_after=day_ago),
                bound=10_000),
            "dry-run count, failed, last day": lambda: inspection.count(
                pool, PLATFORM, DeliveryFilter(statuses=["failed"], created_after=day_ago,
                                     replayable_only=True), bound=10_000),
            "attemptHistory 24 h (100k scan)": lambda: inspection.attempt_history(
                pool, PLATFORM, since=day_ago, bucket_seconds=3600, config_ids=None,
                scan_limit=HISTORY_SCAN_LIMIT),
            "attemptHistory 24 h, one config": lambda: inspection.attempt_history(
                pool, PLATFORM, since=day_ago, bucket_seconds=3600, config_ids=["cfg-3"],
                scan_limit=HISTORY_SCAN_LIMIT),
        }
        print(f"\n{'query':<46} {'median ms':>10}")
        for name, call in cases.items():
            print(f"{name:<46} {timed(call, args.repeat):>10.1f}", flush=True)
        pool.close()


if __name__ == "__main__":
    main()

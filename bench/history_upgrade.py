"""The online upgrade to migration 0008 on a full history, timed while a worker dispatches.

The database is first put back as the release before left it (the former listing indexes,
default autovacuum settings, 0008 not applied), then `migrate` runs while one worker keeps up
with a steady ingest. Deliveries done are sampled every few milliseconds: the longest
stretch without one finishing, during the migration and just before it, says whether the
migration ever held dispatch or ingest up.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import gevent

from bench import history_load as load
from db.adhoc import sql
from db.migrate import migrate

UPGRADED = 8
FORMER_SCHEMA = (
    "DROP INDEX IF EXISTS deliveries_by_created, deliveries_by_config_created,"
    " deliveries_by_status_created, deliveries_by_event_type_created",
    "CREATE INDEX IF NOT EXISTS deliveries_by_config ON deliveries (config_id, id)",
    "CREATE INDEX IF NOT EXISTS deliveries_by_status ON deliveries (status, id)",
    "CREATE INDEX IF NOT EXISTS deliveries_by_event_type ON deliveries (event_type, id)",
    "CREATE INDEX IF NOT EXISTS deliveries_created ON deliveries USING brin (created_at)",
    "ALTER TABLE deliveries RESET (autovacuum_vacuum_scale_factor,"
    " autovacuum_analyze_scale_factor)",
    "ALTER TABLE delivery_attempts RESET (autovacuum_vacuum_scale_factor,"
    " autovacuum_vacuum_insert_scale_factor)",
    f"DELETE FROM schema_migrations WHERE version = {UPGRADED}",
)
SAMPLE = 0.02  # seconds between two looks at dispatch progress


def measure(dsn: str, *, seconds: float, ingest_rate: int, progress) -> dict:
    """Revert to the former schema, then migrate while a worker keeps up with ingest."""
    started = time.monotonic()
    for statement in FORMER_SCHEMA:
        sql(dsn, statement, autocommit=True)
    progress(f"  back to the former schema in {time.monotonic() - started:.0f}s")
    with load.worker(dsn):
        ingest = load.Ingest(dsn, ingest_rate)
        try:
            gevent.sleep(min(5.0, seconds))  # the worker starts and catches up
            before = _watch(dsn, ingest, lambda: gevent.sleep(seconds))
            lines: list[str] = []
            during = _watch(dsn, ingest, lambda: migrate(dsn, report=lines.append))
        finally:
            ingest.stop()
    result = {"migration_seconds": during["seconds"], "before": before, "during": during,
              "migration_log": lines}
    progress(f"  migrated in {during['seconds']:.0f}s; longest dispatch pause"
             f" {during['longest_pause_seconds']:.2f}s (before: "
             f"{before['longest_pause_seconds']:.2f}s); dispatch {during['per_second']:,.0f}/s"
             f" (before: {before['per_second']:,.0f}/s)")
    return result


def _watch(dsn: str, ingest: load.Ingest, body: Callable[[], object]) -> dict:
    """Run `body` while sampling deliveries done; return their rate and the longest pause."""
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        while True:
            samples.append((time.monotonic(), ingest.events - load.outstanding(dsn)))
            gevent.sleep(SAMPLE)

    sampler = gevent.spawn(sample)
    t0 = time.monotonic()
    try:
        body()
    finally:
        sampler.kill()
    seconds = time.monotonic() - t0
    last_progress, longest = samples[0][0], 0.0
    for (_, previous), (moment, done) in itertools.pairwise(samples):
        if done > previous:
            longest = max(longest, moment - last_progress)
            last_progress = moment
    longest = max(longest, samples[-1][0] - last_progress)
    done = samples[-1][1] - samples[0][1]
    return {"seconds": round(seconds, 2), "longest_pause_seconds": round(longest, 3),
            "per_second": round(done / seconds, 1) if seconds else 0.0}

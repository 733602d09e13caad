"""`python -m bench announcements`: what operational events cost.

In one run, in this process, on a durable PostgreSQL: batches of attempt results recorded
(`record_and_settle`, prepared as the worker prepares it) in turns, side by side:

- `succeeding`: every result a success (the record as it runs most of the time);
- `exhausted_off`: every result a delivery out of budget, no operational tenant named (the
  announcement step finds nothing to write);
- `exhausted_on`: the same with an operational tenant named: every result writes an
  announcement, in the record's own statement.

Then the relay publishes every announcement the `exhausted_on` batches wrote, in its
batches, to a tenant with one subscribed config: announcements published a second.

Prints a table on stdout, progress on stderr, and writes the JSON (default
bench/results/announcements.json). The test suite runs it at a tiny size (--quick).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench import environment as env
from db import configs, deliveries, events, operational, tenants
from db.adhoc import fresh_database, sql
from db.deliveries import AttemptResult, Claimed
from db.health import NEVER, HealthRules
from db.pool import ConnectionPool
from db.vocabulary import AttemptOutcome, Status, Verdict
from service.ingest.operational_relay import BATCH
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

RULES = HealthRules(failures_to_open=NEVER, min_volume=NEVER)  # no breaker: every record alike
VARIANTS = ("succeeding", "exhausted_off", "exhausted_on")


@dataclass(frozen=True)
class Variant:
    succeeded: bool
    announcing: bool


SHAPES = {"succeeding": Variant(True, False), "exhausted_off": Variant(False, False),
          "exhausted_on": Variant(False, True)}


def _result(claimed: Claimed, variant: Variant) -> AttemptResult:
    ok = variant.succeeded
    return AttemptResult(
        delivery_id=claimed.id, token=claimed.token, attempt_number=claimed.attempt_count + 1,
        replay_generation=claimed.replay_generation, endpoint=claimed.endpoint,
        outcome=AttemptOutcome.SUCCESS if ok else AttemptOutcome.HTTP_ERROR,
        status_code=200 if ok else 503, duration_ms=3, response_excerpt="", error=None,
        next_status=Status.SUCCEEDED if ok else Status.FAILED, next_delay=None,
        last_error=None if ok else "HTTP 503; retry budget exhausted: 1 attempts",
        verdict=Verdict.SUCCESS if ok else Verdict.FAILURE, exhausted=not ok)


def _fill(pool: ConnectionPool, deliveries_wanted: int) -> int:
    """A customer's config with `deliveries_wanted` due deliveries, and the platform's tenant
    with one subscribed config; return the platform's tenant id."""
    platform = tenants.create(pool, uid="platform")
    configs.create(pool, platform.id, endpoint="http://127.0.0.1:9/ops",
                   event_types=["endpoint.*", "delivery.*", "ordering.*"])
    configs.create(pool, 1, endpoint="http://127.0.0.1:9/hook", event_types=["bench"])
    for start in range(0, deliveries_wanted, 1000):
        events.publish_all(pool, [
            events.new_event(f"e{n}", "bench", {"n": n}, tenant_id=1, max_payload=1 << 20)
            for n in range(start, min(start + 1000, deliveries_wanted))])
    return platform.id


def _record(pool: ConnectionPool, dsn: str, platform_id: int, name: str, batch: int) -> float:
    """Claim a batch, then record it as `name` says; return the record's seconds."""
    variant = SHAPES[name]
    if variant.announcing:
        sql(dsn, "INSERT INTO operational_tenant (tenant_id) VALUES (%s) "
                 "ON CONFLICT (only_row) DO NOTHING", (platform_id,))
    else:
        sql(dsn, "DELETE FROM operational_tenant")
    claimed = deliveries.claim_due(pool, owner="bench", limit=batch, capacity=batch * 10,
                                   hold=batch * 10)
    results = [_result(c, variant) for c in claimed]
    started = time.perf_counter()
    deliveries.record_and_settle(pool, results, RULES)
    return time.perf_counter() - started


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine()}
    rounds = options.rounds
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        dsn = fresh_database(pg.dsn, "announcements")
        pool = ConnectionPool(dsn, size=2)
        try:
            progress("filling ...")
            platform_id = _fill(pool, rounds * len(VARIANTS) * options.batch)
            sql(dsn, "VACUUM ANALYZE", autocommit=True)
            operational.register_types(pool)
            timings: dict[str, list[float]] = {name: [] for name in VARIANTS}
            progress("recording ...")
            for _ in range(rounds):
                for name in VARIANTS:  # in turns: the same database state for each
                    timings[name].append(_record(pool, dsn, platform_id, name, options.batch))
            for name, seconds in timings.items():
                results[name] = {"records": len(seconds),
                                 "median_ms": round(statistics.median(seconds) * 1000, 3),
                                 "mean_ms": round(statistics.mean(seconds) * 1000, 3)}
            extra = results["exhausted_on"]["median_ms"] - results["exhausted_off"]["median_ms"]
            results["ms_per_announcement"] = round(extra / options.batch, 4)
            progress("relaying ...")
            announced = int(sql(dsn, "SELECT count(*) FROM operational_events")[0][0])
            started = time.perf_counter()
            published = 0
            while published < announced:
                published += operational.relay(pool, tenant_id=platform_id, public_url=None,
                                               max_payload=1 << 20, strict=False, limit=BATCH)
            seconds = time.perf_counter() - started
            results["relay"] = {"announcements": announced, "published_per_second":
                                round(published / seconds, 1) if seconds else None}
        finally:
            pool.close()
    return results


def table(results: dict) -> str:
    lines = [f"{'record of a batch':<20} {'median ms':>10} {'mean ms':>10}"]
    for name in VARIANTS:
        row = results[name]
        lines.append(f"{name:<20} {row['median_ms']:>10} {row['mean_ms']:>10}")
    lines.append(f"\nannouncing costs the record {results['ms_per_announcement']} ms "
                 "per announcement")
    relay = results["relay"]
    lines.append(f"the relay published {relay['announcements']} announcements at "
                 f"{relay['published_per_second']} a second")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench announcements", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100,
                        help="records of each variant, in turns (default 100)")
    parser.add_argument("--batch", type=int, default=50,
                        help="results per record, as a worker's batch (default 50)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "announcements.json",
                        help="where to write the JSON (default "
                             "bench/results/announcements.json)")
    options = parser.parse_args(argv)
    if min(options.rounds, options.batch) < 1:
        parser.error("--rounds and --batch must be 1 or more")
    if options.quick:
        options.rounds, options.batch, options.fast_unsafe = 3, 5, True
    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

"""`python -m bench tenant-fairness`: does a tenant with a thousand backlogged configs slow a
tenant with one?

In one run, on one PostgreSQL (fsync on), with one worker (WEBHOOKS_DISPATCH_CONCURRENCY=50):

- alone: a quiet tenant's one config, and nothing else; events published to it at a steady
  rate, each one's publish → arrival time noted by its receiver;
- beside: the same, while a busy tenant's configs (default 1,000, created through the API)
  have a backlog due (default 100,000 deliveries, the same number for each config) that the
  worker is draining, at its own receiver (answering after --busy-delay seconds).

Prints the quiet tenant's p50 and p99 in both, the ratio of the medians (target: at most
1.5), and the busy tenant's deliveries a second while the quiet one was measured (it must
still have had a backlog at the end, or the run says so). Writes the JSON (default
bench/results/tenant_fairness.json). The test suite runs it at tiny sizes (--quick).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench import environment as env
from bench import history_api
from bench.configs import create_configs
from bench.scenarios import DISPATCH_WHERE, _percentile
from db.adhoc import count_deliveries, fresh_database
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

CONCURRENCY = "50"  # WEBHOOKS_DISPATCH_CONCURRENCY of the worker
QUIET, BUSY = "quiet", "busy"  # the tenants' uids, and their configs' event types
TARGET = 1.5  # the quiet tenant's median beside the busy one, at most this times alone


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine()}
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        progress("the quiet tenant alone ...")
        results["alone"] = _quiet_tenant(pg, options, busy=False)
        progress(f"the quiet tenant beside {options.configs:,} busy configs with "
                 f"{options.backlog:,} deliveries due ...")
        results["beside"] = _quiet_tenant(pg, options, busy=True)
    alone, beside = results["alone"]["p50_ms"], results["beside"]["p50_ms"]
    results["p50_ratio"] = round(beside / alone, 3) if alone else None
    results["targets"] = env.checked_targets(
        [(f"quiet tenant p50 beside a busy one ≤ {TARGET} x alone", "p50_ratio", "<=", TARGET)],
        results.get)
    return results


def _quiet_tenant(pg, options: argparse.Namespace, *, busy: bool) -> dict:
    """The quiet tenant's publish → arrival delays, with the busy tenant's backlog draining
    beside it when `busy`."""
    from db import events, tenants
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, f"tenant_fairness_{int(busy)}")
    record = Path(tempfile.mkdtemp()) / "delays.jsonl"
    pool = ConnectionPool(dsn, size=2)
    quiet = tenants.create(pool, uid=QUIET)
    heavy = tenants.create(pool, uid=BUSY)
    with env.receiver(record=str(record)) as quiet_url, \
            env.receiver(delay=options.busy_delay) as busy_url:
        with history_api.web(dsn, WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="true") as api:
            token = env.api_token(dsn, "operator", "bench-tenants")
            create_configs(api, token, quiet_url, 1, event_type=QUIET, prefix=QUIET,
                           tenant=QUIET)
            if busy:
                create_configs(api, token, busy_url, options.configs, event_type=BUSY,
                               prefix=BUSY, tenant=BUSY)
        if busy:
            env.prefill(dsn, options.backlog // options.configs, prefix=BUSY, event_type=BUSY,
                        tenant_id=heavy.id)
        busy_done = f"{DISPATCH_WHERE} AND tenant_id = {heavy.id}"
        with env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY=CONCURRENCY):
            events.publish(pool, events.new_event("warm-up", QUIET, {}, tenant_id=quiet.id,
                                                  max_payload=1 << 20))
            env.wait_for(dsn, f"{DISPATCH_WHERE} AND tenant_id = {quiet.id}", 1, timeout=120)
            if busy:  # the busy tenant's backlog drains at full speed before the clock starts
                env.wait_for(dsn, busy_done, options.warmup, timeout=options.timeout)
            busy_before, started = count_deliveries(dsn, busy_done), time.monotonic()
            interval = 1.0 / options.rate
            for n in range(options.events):
                delay = started + n * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                events.publish(pool, events.new_event(f"quiet-{n}", QUIET,
                                                      {"sent_at": time.time()},
                                                      tenant_id=quiet.id, max_payload=1 << 20))
            env.wait_for(dsn, f"{DISPATCH_WHERE} AND tenant_id = {quiet.id}",
                         options.events + 1, timeout=options.timeout)
            seconds = time.monotonic() - started
            busy_after = count_deliveries(dsn, busy_done)
            busy_left = count_deliveries(dsn, f"tenant_id = {heavy.id} AND status = 'pending'")
    pool.close()
    delays = sorted(json.loads(line)["delay"] * 1000
                    for line in record.read_text().splitlines())  # the warm-up has no sent_at
    result = {"events": options.events, "received": len(delays),
              "p50_ms": round(_percentile(delays, 50), 2),
              "p99_ms": round(_percentile(delays, 99), 2),
              "max_ms": round(max(delays), 2) if delays else None}
    if busy:
        result.update(busy_configs=options.configs, busy_backlog=options.backlog,
                      busy_per_second=round((busy_after - busy_before) / seconds, 1),
                      busy_left_at_end=busy_left)
    return result


def table(results: dict) -> str:
    lines = [f"{'quiet tenant':<34} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}"]
    for name, label in (("alone", "alone"), ("beside", "beside the busy tenant")):
        row = results[name]
        lines.append(f"{label:<34} {row['p50_ms']:>9} {row['p99_ms']:>9} {row['max_ms']!s:>9}")
    beside = results["beside"]
    lines.append(f"\np50 beside / alone: {results['p50_ratio']}")
    lines.append(f"busy tenant meanwhile: {beside['busy_per_second']:,} deliveries/s over "
                 f"{beside['busy_configs']:,} configs, {beside['busy_left_at_end']:,} still "
                 "pending at the end")
    if not beside["busy_left_at_end"]:
        lines.append("NOTE the busy backlog ran out before the quiet events did: raise "
                     "--backlog")
    lines.append("")
    lines.extend(env.target_lines(results["targets"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tenant-fairness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=1_000,
                        help="configs of the busy tenant (default 1000)")
    parser.add_argument("--backlog", type=int, default=100_000,
                        help="deliveries due over them (default 100000)")
    parser.add_argument("--busy-delay", type=float, default=0.0,
                        help="seconds the busy tenant's receiver takes to answer (default 0)")
    parser.add_argument("--events", type=int, default=300,
                        help="events published to the quiet tenant (default 300)")
    parser.add_argument("--rate", type=float, default=20.0,
                        help="their rate per second (default 20)")
    parser.add_argument("--warmup", type=int, default=2_000,
                        help="busy deliveries sent before the clock starts (default 2000)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds any wait may take (default 600)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, short runs: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "tenant_fairness.json",
                        help="where to write the JSON (default "
                             "bench/results/tenant_fairness.json)")
    options = parser.parse_args(argv)
    if options.configs < 1 or options.backlog < options.configs:
        parser.error("--configs must be at least 1 and --backlog at least --configs")
    if options.quick:
        options.configs, options.backlog, options.warmup = 20, 2_000, 20
        options.events, options.rate, options.timeout = 10, 20.0, 120.0
        options.fast_unsafe = True
    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

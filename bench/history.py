"""`python -m bench history`: does months of history slow anything down?

Fills a database with DELIVERIES deliveries (default 10,000,000, about 3 attempts each,
spread over 90 days: bench/history_fill.py), then measures, in one run:

- dispatch deliveries/s of one worker, against an empty table's figure measured side by side;
- every dashboard query of the API over HTTP (p50/p99), side by side with the same queries
  on a small history (the difference is what depth costs; the rest is the machine);
- retention: a day of expired history deleted while dispatch and ingest run, its rows/s,
  and their throughput meanwhile against before;
- the online upgrade to migration 0008 (its indexes built concurrently on the full table):
  the longest pause of dispatch while it runs;
- disk per million deliveries (tables and indexes).

Prints progress on stderr, a table on stdout, and writes the JSON (default
bench/results/history.json). The test suite runs it at tiny sizes on fsync-off PostgreSQL
(tests/integration/test_history_bench.py): its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from pathlib import Path

import gevent

from bench import environment as env
from bench import history_api, history_fill, history_upgrade
from bench import history_load as load
from db import retention
from db.adhoc import fresh_database, sql
from db.pool import ConnectionPool
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine
from service.runtime.retention import RETENTION_REST
from service.runtime.throttle import DutyCycle

DAY = 86_400
# (name, where, key, comparison, target): the targets of a history at scale.
TARGETS = (
    ("dispatch with history ≥ 0.8 x empty", "ratios", "dispatch_history_vs_empty", ">=", 0.8),
    ("every API call p99 ≤ 50 ms", "ratios", "api_worst_p99_ms", "<=", 50.0),
    ("a day of retention in < 60 s", "retention", "seconds", "<=", 60.0),
    ("online upgrade: dispatch never paused > 1 s", "upgrade_pause", "seconds", "<=", 1.0),
    ("dispatch during retention ≥ 0.8 x around it", "ratios",
     "dispatch_retention_vs_around", ">=", 0.8),
)


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": vars(options), "machine": machine()}
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        tune(pg)
        with env.receiver() as url:
            empty = fresh_database(pg.dsn, "history_empty")
            dsn = fresh_database(pg.dsn, "history")
            results["fill"] = history_fill.fill(dsn, options.deliveries, progress=progress)
            results["disk"] = _disk(dsn, options.deliveries)
            progress(f"disk: {results['disk']['per_million_mb']:,.0f} MB per million deliveries")

            progress("dispatch, one worker on the history and one on an empty table, side by"
                     " side ...")
            for database in (empty, dsn):
                env.add_configs(database, url)
            results["dispatch_history"], results["dispatch_empty"] = _dispatch(
                [dsn, empty], options)
            progress(f"  {results['dispatch_history']['per_second']:,.0f} deliveries/s with the"
                     f" history, {results['dispatch_empty']['per_second']:,.0f} on an empty table")

            small = options.small_history
            progress(f"the empty table gets a small history of {small:,} deliveries to compare"
                     " the API with ...")
            history_fill.fill(empty, small, progress=lambda _: None)
            progress(f"API over HTTP, {options.calls} calls each, on both ...")
            results["api"] = history_api.measure({"full": dsn, "small": empty},
                                                 repeat=options.calls, progress=progress)
            sql(pg.dsn, "DROP DATABASE history_empty WITH (FORCE)", autocommit=True)

            if not options.skip_upgrade:
                progress("the online upgrade (migration 0008) while dispatch and ingest run ...")
                results["upgrade"] = history_upgrade.measure(
                    dsn, seconds=options.seconds, ingest_rate=options.ingest_rate,
                    progress=progress)

            progress("retention while dispatch and ingest run ...")
            results["retention"] = _retention_under_load(dsn, options, progress)
    results["ratios"] = _ratios(results)
    results["targets"] = _targets(results)
    return results


def tune(pg) -> None:
    """Apply the PostgreSQL settings docs/operations.md recommends for this size, restart."""
    for setting, value in (("shared_buffers", "1GB"), ("max_wal_size", "8GB"),
                           ("checkpoint_timeout", "15min"), ("work_mem", "16MB"),
                           ("maintenance_work_mem", "512MB"),
                           ("autovacuum_vacuum_cost_limit", "2000"),
                           ("random_page_cost", "1.1")):
        sql(pg.dsn, f"ALTER SYSTEM SET {setting} = '{value}'", autocommit=True)
    pg.stop()
    pg.start()


def _dispatch(dsns: list[str], options: argparse.Namespace) -> list[dict]:
    """Deliveries/s of one worker per database, all running at once through a due backlog.

    Side by side, so that the load of a shared machine weighs on each alike: the ratio of
    the rates holds even when the machine's speed does not. The window lasts
    `options.seconds`, and on a starved machine until each worker delivered in it.
    """
    warmup = min(2_000, options.dispatch // 10)
    with contextlib.ExitStack() as stack:
        for dsn in dsns:
            stack.enter_context(load.worker(dsn))
        deadline = time.monotonic() + 600
        # Both backlogs arrive once both workers listen: a worker that starts seconds before
        # the other must not have worked through its backlog alone by then.
        while not all(load.listening(dsn) for dsn in dsns):
            if time.monotonic() > deadline:
                raise RuntimeError("a worker did not start in 10 minutes")
            time.sleep(0.2)
        for dsn in dsns:
            load.prefill(dsn, options.dispatch, f"dispatch-{time.time_ns()}-")
        while any(load.outstanding(dsn) > options.dispatch - warmup for dsn in dsns):
            if time.monotonic() > deadline:
                raise RuntimeError("a worker delivered nothing in 10 minutes")
            time.sleep(0.5)
        t0, before = time.monotonic(), [load.outstanding(dsn) for dsn in dsns]
        if min(before) == 0:
            raise RuntimeError("a worker finished its backlog before the other began:"
                               " give --dispatch a larger backlog")
        while True:
            time.sleep(0.5)
            after = [load.outstanding(dsn) for dsn in dsns]
            seconds = time.monotonic() - t0
            each_delivered = all(a < b for b, a in zip(before, after, strict=True))
            # End while both are still busy, or once the window is over; either way only
            # once each worker has delivered in it (a starved one may lag a while).
            if each_delivered and (min(after) < options.dispatch // 10
                                   or seconds >= options.seconds):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("a worker stopped delivering")
    return [{"deliveries": b - a, "seconds": round(seconds, 2),
             "per_second": round((b - a) / seconds, 1)} for b, a in zip(before, after, strict=True)]


def _retention_under_load(dsn: str, options: argparse.Namespace, progress) -> dict:
    """Dispatch and ingest for a while, delete a day of history meanwhile, go on a while.

    Dispatch during retention is compared with the mean of before and after it, which
    evens out a shared machine's load drifting during the run.
    """
    expired = sql(dsn, "SELECT count(*), coalesce(sum(attempt_count), 0) FROM ("
                           " SELECT attempt_count FROM deliveries WHERE status = 'succeeded'"
                           "   AND updated_at < now() - make_interval(days => 30)"
                           " UNION ALL SELECT attempt_count FROM deliveries"
                           "   WHERE status IN ('failed', 'cancelled')"
                           "   AND updated_at < now() - make_interval(days => 90)) x")[0]
    backlog = options.retention_backlog
    load.prefill(dsn, backlog, f"retention-{time.time_ns()}-")
    pool = ConnectionPool(dsn, size=1, application_name="bench-retention")
    with load.worker(dsn):
        # Relative to what is outstanding now: earlier phases may have left some behind.
        target = load.outstanding(dsn) - min(2_000, backlog // 10)
        while load.outstanding(dsn) > target:
            time.sleep(0.5)
        ingest = load.Ingest(dsn, options.ingest_rate)
        before = _phase(dsn, ingest, lambda: gevent.sleep(options.seconds))
        progress(f"  before: dispatch {before['dispatch_per_second']:,.0f}/s,"
                 f" ingest {before['ingest_per_second']:,.0f} events/s")
        deleted: list[retention.Deleted] = []
        during = _phase(dsn, ingest, lambda: deleted.append(retention.run(
            pool, succeeded_age=30 * DAY, finished_age=90 * DAY,
            batch=options.retention_batch, pause=DutyCycle(options.retention_rest))))
        after = _phase(dsn, ingest, lambda: gevent.sleep(options.seconds))
        ingest.stop()
        left = load.outstanding(dsn)
    pool.close()
    gone = deleted[0]
    seconds = during["seconds"]
    rows = gone.succeeded + gone.finished + int(expired[1]) + gone.events
    result = {"deliveries": gone.succeeded + gone.finished, "expected_deliveries": expired[0],
              "attempts": int(expired[1]), "events": gone.events, "seconds": seconds,
              "rows_per_second": round(rows / seconds, 1) if seconds else 0.0,
              "deliveries_per_second": round((gone.succeeded + gone.finished) / seconds, 1)
              if seconds else 0.0,
              "batch": options.retention_batch, "rest": options.retention_rest,
              "before": before, "during": during,
              "after": after, "backlog_left": left}
    progress(f"  retention: {result['deliveries']:,} deliveries, {result['attempts']:,} attempts"
             f", {gone.events:,} events in {seconds:.1f}s; dispatch meanwhile"
             f" {during['dispatch_per_second']:,.0f}/s, ingest {during['ingest_per_second']:,.0f}"
             f" events/s{'' if left else ' (the backlog ran out: raise --retention-backlog)'}")
    return result


def _phase(dsn: str, ingest: load.Ingest, body) -> dict:
    """Run `body`; return its length and the dispatch and ingest rates meanwhile."""
    outstanding0, events0, t0 = load.outstanding(dsn), ingest.events, time.monotonic()
    body()
    outstanding1, events1, seconds = load.outstanding(dsn), ingest.events, time.monotonic() - t0
    ingested = events1 - events0  # one delivery per event: the bench config is the only one
    dispatched = outstanding0 + ingested - outstanding1
    return {"seconds": round(seconds, 2),
            "dispatch_per_second": round(dispatched / seconds, 1),
            "ingest_per_second": round(ingested / seconds, 1)}


def _disk(dsn: str, deliveries: int) -> dict:
    """Return the size of each history table and its indexes, and the total per million."""
    sizes = {}
    for table in history_fill.TABLES:
        heap, indexes = sql(dsn, "SELECT pg_table_size(%s::regclass),"
                                     " pg_indexes_size(%s::regclass)", (table, table))[0]
        sizes[table] = {"table_mb": round(heap / 2**20, 1), "indexes_mb": round(indexes / 2**20, 1)}
    total = sum(v["table_mb"] + v["indexes_mb"] for v in sizes.values())
    return {"tables": sizes, "total_mb": round(total, 1),
            "per_million_mb": round(total / deliveries * 1e6, 1)}


def _ratios(results: dict) -> dict:
    ratios = {}
    empty = results["dispatch_empty"]["per_second"]
    if empty:
        ratios["dispatch_history_vs_empty"] = round(
            results["dispatch_history"]["per_second"] / empty, 3)
    ratios["api_worst_p99_ms"] = max(call["p99_ms"] for call in results["api"].values())
    kept = results["retention"]
    around = (kept["before"]["dispatch_per_second"] + kept["after"]["dispatch_per_second"]) / 2
    if around:
        ratios["dispatch_retention_vs_around"] = round(
            kept["during"]["dispatch_per_second"] / around, 3)
    return ratios


def _targets(results: dict) -> list[dict]:
    if "upgrade" in results:
        results["upgrade_pause"] = {
            "seconds": results["upgrade"]["during"]["longest_pause_seconds"]}
    targets = [(name, (where, key), comparison, target)
               for name, where, key, comparison, target in TARGETS]
    return env.checked_targets(
        targets, lambda place: results.get(place[0], {}).get(place[1]))


def table(results: dict) -> str:
    lines = [f"history: {results['fill']['deliveries']:,} deliveries,"
             f" {results['fill']['attempts']:,} attempts (filled in"
             f" {results['fill']['seconds']:,.0f}s)", "-" * 78]
    lines.append(f"{'dispatch, empty table':<44}"
                 f" {results['dispatch_empty']['per_second']:>10,.0f}/s")
    lines.append(f"{'dispatch, with the history':<44}"
                 f" {results['dispatch_history']['per_second']:>10,.0f}/s")
    lines.append("-" * 78)
    small = results["options"]["small_history"]
    lines.append(f"{'API call (over HTTP), ms':<36} {'p50':>8} {'p99':>8}"
                 f"   {'with ' + format(small, ',') + ' deliveries':>24}")
    for name, call in results["api"].items():
        lines.append(f"{name:<36} {call['p50_ms']:>8.1f} {call['p99_ms']:>8.1f}"
                     f"   {call['small_p50_ms']:>15.1f} {call['small_p99_ms']:>8.1f}")
    lines.append("-" * 78)
    kept = results["retention"]
    lines.append(f"{'retention: deliveries + attempts + events':<44}"
                 f" {kept['deliveries'] + kept['attempts'] + kept['events']:>10,}"
                 f" in {kept['seconds']:.1f}s = {kept['rows_per_second']:,.0f} rows/s")
    for phase in ("before", "during", "after"):
        lines.append(f"{'dispatch / ingest ' + phase + ' retention':<44}"
                     f" {kept[phase]['dispatch_per_second']:>10,.0f}/s"
                     f" {kept[phase]['ingest_per_second']:>8,.0f} events/s")
    if "upgrade" in results:
        upgrade = results["upgrade"]
        lines.append(f"{'online upgrade to 0008, seconds':<44}"
                     f" {upgrade['migration_seconds']:>10,.0f}")
        for phase in ("before", "during"):
            lines.append(f"{'longest dispatch pause ' + phase + ' it, s':<44}"
                         f" {upgrade[phase]['longest_pause_seconds']:>10.2f}"
                         f"  ({upgrade[phase]['per_second']:,.0f} deliveries/s)")
    lines.append("-" * 78)
    for name, size in results["disk"]["tables"].items():
        lines.append(f"{name:<44} {size['table_mb']:>10,.0f} MB + {size['indexes_mb']:,.0f} MB"
                     " of indexes")
    lines.append(f"{'disk per million deliveries':<44}"
                 f" {results['disk']['per_million_mb']:>10,.0f} MB")
    lines.append("-" * 78)
    for check in results["targets"]:
        lines.append(f"{check['target']:<44} {check['value']:>10,.3f}"
                     f"  {'met' if check['met'] else 'MISSED'}")
    return "\n".join(lines)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=10_000_000,
                        help="history deliveries to fill (default 10,000,000)")
    parser.add_argument("--dispatch", type=int, default=100_000,
                        help="due backlog each dispatch measurement works through")
    parser.add_argument("--small-history", type=int, default=20_000,
                        help="deliveries of the small history the API calls are compared with")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per API query")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="length of each dispatch measurement, and of the retention"
                             " phase's before and after")
    parser.add_argument("--retention-backlog", type=int, default=300_000,
                        help="due backlog that keeps dispatch busy through the retention phase")
    parser.add_argument("--retention-batch", type=int, default=retention.DEFAULT_BATCH,
                        help="deliveries per retention transaction")
    parser.add_argument("--retention-rest", type=float, default=RETENTION_REST,
                        help="retention rests this many times each batch's time after it"
                             " (the worker's setting by default; 0: flat out)")
    parser.add_argument("--ingest-rate", type=int, default=500,
                        help="events/s published during the retention phase")
    parser.add_argument("--skip-upgrade", action="store_true",
                        help="skip timing the online upgrade to migration 0008")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (smoke runs only: the numbers are not durable ones)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" /
                        "history.json", help="where the JSON goes")
    options = parser.parse_args(argv)
    if options.deliveries < 1000:
        parser.error("--deliveries: at least 1000")

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _interrupt)  # stop workers and PostgreSQL on the way out
    try:
        results = run(options, progress)
    except KeyboardInterrupt:
        progress("interrupted")
        return 130
    print(table(results))
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(results, indent=2, default=str))
    progress(f"results written to {options.output}")
    return 0

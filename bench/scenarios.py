"""The benchmark scenarios of bench/: each starts what it needs and returns its numbers."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import environment as env
from db.adhoc import count_deliveries, fresh_database
from db.scope import DEFAULT_TENANT_ID
from service.local.pgbouncer import LocalPgBouncer
from service.local.processes import ROOT, peak_rss_mb

DISPATCH_WHERE = "status = 'succeeded'"


@dataclass(frozen=True)
class Sizes:
    """How big and long each scenario runs (`--quick` shrinks everything for a smoke test)."""

    deliveries: int = 50_000
    backlog: int = 1_000_000
    seconds: float = 20.0
    concurrency: int = 50
    latency_rate: int = 200
    warmup: int = 2_000
    peer_tasks: int = 10_000
    dispatch_workers: tuple[int, ...] = (1, 2, 4)  # worker processes of each dispatch run
    ingest_fan_outs: tuple[int, ...] = (1, 10)  # configs per event type of each ingest run
    polling_period: float = 3.0  # seconds the polling design sleeps between two ticks
    slow_backlogs: tuple[int, ...] = (1_500, 100_000)  # a slow endpoint's backlog (isolation)
    probes: int = 5  # events published to the quiet config behind the slow one (isolation)
    probe_interval: float = 0.5  # seconds between two of them
    shutdown_timeout: float | None = None  # WEBHOOKS_SHUTDOWN_TIMEOUT, seconds, of the workers
    #                                        beside a hung endpoint (None: the worker's default)


QUICK = Sizes(deliveries=100, backlog=2_000, seconds=0.25, latency_rate=50, warmup=0,
              peer_tasks=200, dispatch_workers=(1,), ingest_fan_outs=(1,), polling_period=0.1,
              slow_backlogs=(200,), probes=2, probe_interval=0.1, shutdown_timeout=1.0)


def dispatch(pg, sizes: Sizes, *, workers: int = 1, pooler: LocalPgBouncer | None = None,
             name: str | None = None) -> dict:
    """Deliveries/s of `workers` worker processes from a pre-filled backlog (through the
    transaction-mode `pooler`, if given)."""
    dsn = fresh_database(pg.dsn, name or f"dispatch_{workers}")
    with env.receiver() as url:
        env.add_configs(dsn, url)
        env.prefill(dsn, sizes.deliveries)
        with env.workers(pooler.dsn_for(dsn) if pooler else dsn, workers,
                         WEBHOOKS_DISPATCH_CONCURRENCY=str(sizes.concurrency)) as processes:
            result = env.rate_between(dsn, DISPATCH_WHERE, sizes.deliveries,
                                      timeout=max(sizes.seconds * 6, 60), warmup=sizes.warmup,
                                      processes=processes)
            result["peak_rss_mb"] = max(peak_rss_mb(p.pid) or 0 for p in processes)
    result["workers"] = workers
    return result


def ceiling(sizes: Sizes, *, mode: str = "session") -> dict:
    """POSTs/s of a plain gevent pool of `requests` with no database (bench/ceiling.py)."""
    with env.receiver() as url:
        output = subprocess.run(
            [sys.executable, "-m", "bench.ceiling", "--url", url, "--mode", mode,
             "--concurrency", str(sizes.concurrency), "--seconds", str(sizes.seconds)],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    result = json.loads(output)
    return {"per_second": round(result["posts_per_second"], 1), "posts": result["posts"],
            "cpu_ms_per_post": round(result["cpu_ms_per_post"], 3), "mode": mode}


def polling_design(pg, sizes: Sizes) -> dict:
    """Deliveries/s of the former design's tick loop (claim 50, send all, sleep a polling
    period of 3 s, no NOTIFY) over twice the timed length, two periods at least, and until
    its first tick is done."""
    dsn = fresh_database(pg.dsn, "polling")
    with env.receiver() as url:
        env.add_configs(dsn, url)
        env.prefill(dsn, sizes.deliveries)
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "bench.polling_design", "--dsn", dsn,
                                    "--period", str(sizes.polling_period)], cwd=ROOT)
        try:
            time.sleep(max(sizes.seconds, sizes.polling_period + 0.5) * 2)
            env.wait_for(dsn, DISPATCH_WHERE, 1, timeout=120)  # a slow start: its first tick
            done = count_deliveries(dsn, DISPATCH_WHERE)
            seconds = round(time.monotonic() - started, 1)
        finally:
            process.kill()
            process.wait()
    return {"per_second": round(done / seconds, 1), "deliveries": done, "seconds": seconds}


def backlog(pg, sizes: Sizes) -> dict:
    """Dispatch throughput with a huge not-yet-due backlog in the table."""
    dsn = fresh_database(pg.dsn, "backlog")
    with env.receiver() as url:
        env.add_configs(dsn, url)
        started = time.monotonic()
        env.prefill(dsn, sizes.backlog, prefix="later", due_in="1 day")
        fill_seconds = time.monotonic() - started
        env.prefill(dsn, sizes.deliveries, prefix="now")
        with env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY=str(sizes.concurrency)):
            result = env.rate_between(dsn, DISPATCH_WHERE, sizes.deliveries,
                                      timeout=max(sizes.seconds * 6, 60), warmup=sizes.warmup)
    result["not_due"] = sizes.backlog
    result["fill_seconds"] = round(fill_seconds, 1)
    return result


def latency(pg, sizes: Sizes, *, pooler: LocalPgBouncer | None = None,
            direct_url: bool = False, name: str = "latency") -> dict:
    """Publish → receiver delay percentiles at a steady publish rate (the worker through the
    transaction-mode `pooler`, if given, and then with a direct URL if `direct_url`)."""
    from db import events
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, name)
    record = Path(tempfile.mkdtemp()) / "delays.jsonl"
    settings = {"WEBHOOKS_DATABASE_DIRECT_URL": dsn} if pooler and direct_url else {}
    with env.receiver(record=str(record)) as url:
        env.add_configs(dsn, url)
        pool = ConnectionPool(dsn, size=4)
        with env.workers(pooler.dsn_for(dsn) if pooler else dsn, 1, **settings):
            # Start the clock once the worker delivers: a fixed pause was shorter than a
            # worker's start on a slow machine, and the events published meanwhile waited
            # for it (the p99 tail measured there). The warm-up event has no `sent_at`.
            events.publish(pool, events.new_event("warm-up", env.EVENT_TYPE, {},
                                                  tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20))
            env.wait_for(dsn, DISPATCH_WHERE, 1, timeout=120)
            interval = 1.0 / sizes.latency_rate
            total = int(sizes.seconds * sizes.latency_rate)
            started = time.monotonic()
            for n in range(total):
                delay = started + n * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                event = events.new_event(f"lat-{n}", env.EVENT_TYPE, {"sent_at": time.time()},
                                         tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20)
                events.publish(pool, event)
            achieved = total / (time.monotonic() - started)
            env.wait_for(dsn, DISPATCH_WHERE, total + 1, timeout=300)  # returns once all arrived
        pool.close()
    delays = sorted(json.loads(line)["delay"] * 1000 for line in record.read_text().splitlines())
    return {
        "events": total, "received": len(delays), "rate": round(achieved, 1),
        "p50_ms": round(_percentile(delays, 50), 2), "p95_ms": round(_percentile(delays, 95), 2),
        "p99_ms": round(_percentile(delays, 99), 2),
        "mean_ms": round(statistics.fmean(delays), 2) if delays else None,
    }


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(p / 100 * len(values)) - 1))
    return values[index]

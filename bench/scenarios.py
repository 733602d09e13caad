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


QUICK = Sizes(deliveries=300, backlog=2_000, seconds=1.0, latency_rate=50, warmup=0,
              peer_tasks=200)


def dispatch(pg, sizes: Sizes, *, workers: int = 1) -> dict:
    """Deliveries/s of `workers` worker processes from a pre-filled backlog."""
    dsn = env.fresh_database(pg, f"dispatch_{workers}")
    with env.receiver() as url:
        env.add_configs(dsn, url)
        env.prefill(dsn, sizes.deliveries)
        with env.workers(dsn, workers,
                         WEBHOOKS_DISPATCH_CONCURRENCY=str(sizes.concurrency)) as processes:
            result = env.rate_between(dsn, DISPATCH_WHERE, sizes.deliveries,
                                      timeout=max(sizes.seconds * 6, 60), warmup=sizes.warmup)
            result["peak_rss_mb"] = max(env.peak_rss_mb(p.pid) or 0 for p in processes)
    result["workers"] = workers
    return result


def ceiling(sizes: Sizes, *, mode: str = "session") -> dict:
    """POSTs/s of a plain gevent pool of `requests` with no database (bench/ceiling.py)."""
    with env.receiver() as url:
        output = subprocess.run(
            [sys.executable, "-m", "bench.ceiling", "--url", url, "--mode", mode,
             "--concurrency", str(sizes.concurrency), "--seconds", str(sizes.seconds)],
            cwd=env.ROOT, capture_output=True, text=True, check=True,
        ).stdout
    result = json.loads(output)
    return {"per_second": round(result["posts_per_second"], 1), "posts": result["posts"],
            "mode": mode}


def polling_design(pg, sizes: Sizes) -> dict:
    """Deliveries/s of the seed's tick loop: claim 50, send all, sleep 3 s, no NOTIFY."""
    dsn = env.fresh_database(pg, "polling")
    seconds = max(sizes.seconds, 3.5) * 2
    with env.receiver() as url:
        env.add_configs(dsn, url)
        env.prefill(dsn, sizes.deliveries)
        process = subprocess.Popen([sys.executable, "-m", "bench.polling_design", "--dsn", dsn],
                                   cwd=env.ROOT)
        try:
            time.sleep(seconds)
            done = env.count(dsn, DISPATCH_WHERE)
        finally:
            process.kill()
            process.wait()
    return {"per_second": round(done / seconds, 1), "deliveries": done, "seconds": seconds}


def backlog(pg, sizes: Sizes) -> dict:
    """Dispatch throughput with a huge not-yet-due backlog in the table."""
    dsn = env.fresh_database(pg, "backlog")
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


def latency(pg, sizes: Sizes) -> dict:
    """Publish → receiver delay percentiles at a steady publish rate."""
    from db import events
    from db.pool import ConnectionPool

    dsn = env.fresh_database(pg, "latency")
    record = Path(tempfile.mkdtemp()) / "delays.jsonl"
    with env.receiver(record=str(record)) as url:
        env.add_configs(dsn, url)
        pool = ConnectionPool(dsn, size=4)
        with env.workers(dsn, 1):
            time.sleep(1.0)
            interval = 1.0 / sizes.latency_rate
            total = int(sizes.seconds * sizes.latency_rate)
            started = time.monotonic()
            for n in range(total):
                delay = started + n * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                event = events.new_event(f"lat-{n}", env.EVENT_TYPE, {"sent_at": time.time()},
                                         max_payload=1 << 20)
                events.publish(pool, event)
            achieved = total / (time.monotonic() - started)
            env.wait_for(dsn, DISPATCH_WHERE, total, timeout=30)
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

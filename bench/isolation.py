"""Endpoint isolation: one bad endpoint must not slow the others (`python -m bench isolation`).

(a) ten fast endpoints beside one that never answers (HTTP timeout 5 s): the fast endpoints'
    deliveries/s as a ratio of the same run without the hung one;
(b) a 200 ms endpoint with a backlog (1,500, then 100,000), then one event for another
    config: publish -> arrival;
(c) the claim with 100,000 held (paused) deliveries of one config ahead in due order: the
    claim statement's time, against the same claim on an empty queue.
Dispatch with one config and the latency scenario are `python -m bench dispatch latency`.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench import environment as env
from db.adhoc import count_deliveries, fresh_database
from db.scope import DEFAULT_TENANT_ID, PLATFORM

FAST_CONFIGS = 10
HUNG_TIMEOUT = "5s"
SLOW_DELAY = 0.2  # seconds the slow endpoint takes per request


def fast_beside_hung(pg, sizes) -> dict:
    """(a) Fast endpoints' deliveries/s with and without a hung endpoint beside them."""
    alone = _fast_rate(pg, sizes, hung=False)
    beside = _fast_rate(pg, sizes, hung=True)
    return {"alone_per_second": alone, "beside_hung_per_second": beside,
            "ratio": round(beside / alone, 3) if alone else None}


def _fast_rate(pg, sizes, *, hung: bool) -> float:
    dsn = fresh_database(pg.dsn, f"isolation_{'hung' if hung else 'alone'}")
    per_config = max(10, sizes.deliveries // FAST_CONFIGS)
    with env.receiver() as fast_url, \
            (env.receiver(hang=True) if hung else contextlib.nullcontext()) as hung_url:
        env.add_configs(dsn, fast_url, FAST_CONFIGS, event_type="fast", prefix="fast")
        env.prefill(dsn, per_config, prefix="fast", event_type="fast")
        if hung:
            env.add_configs(dsn, hung_url, 1, event_type="hung", prefix="hung")
            env.prefill(dsn, per_config, prefix="hung", event_type="hung")
        shutdown = ({} if sizes.shutdown_timeout is None else
                    {"WEBHOOKS_SHUTDOWN_TIMEOUT": f"{sizes.shutdown_timeout:g}s"})
        with env.workers(dsn, 1, WEBHOOKS_HTTP_TIMEOUT=HUNG_TIMEOUT,
                         WEBHOOKS_DISPATCH_CONCURRENCY=str(sizes.concurrency), **shutdown):
            target = per_config * FAST_CONFIGS
            result = env.rate_between(dsn, "status = 'succeeded'", target,
                                      timeout=max(sizes.seconds * 3, 30),
                                      warmup=min(sizes.warmup, target // 10))
    return result["per_second"]


def quiet_behind_slow(pg, sizes, *, backlog: int) -> dict:
    """(b) Publish -> arrival of a quiet config's events while a slow endpoint's backlog drains."""
    from db import events
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, f"isolation_slow_{backlog}")
    record = Path(tempfile.mkdtemp()) / "delays.jsonl"
    with env.receiver(delay=SLOW_DELAY) as slow_url, \
            env.receiver(record=str(record)) as quiet_url:
        env.add_configs(dsn, slow_url, 1, event_type="slow", prefix="slow")
        env.add_configs(dsn, quiet_url, 1, event_type="quiet", prefix="quiet")
        env.prefill(dsn, backlog, prefix="slow", event_type="slow")
        pool = ConnectionPool(dsn, size=1)
        with env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY=str(sizes.concurrency)):
            env.wait_for(dsn, "status = 'succeeded'", 50, timeout=60)
            for n in range(sizes.probes):
                event = events.new_event(f"quiet-{n}", "quiet", {"sent_at": time.time()},
                                         tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20)
                events.publish(pool, event)
                time.sleep(sizes.probe_interval)
            env.wait_for(dsn, "event_type = 'quiet' AND status = 'succeeded'", sizes.probes,
                         timeout=60)
            drained = count_deliveries(dsn, "event_type = 'slow' AND status = 'succeeded'")
        pool.close()
    delays = [json.loads(line)["delay"] * 1000 for line in record.read_text().splitlines()]
    return {"backlog": backlog, "events": sizes.probes, "received": len(delays),
            "max_ms": round(max(delays), 1) if delays else None,
            "median_ms": round(statistics.median(delays), 1) if delays else None,
            "slow_delivered_meanwhile": drained}


def claim_behind_held(pg, held: int = 100_000, rounds: int = 50) -> dict:
    """(c) Milliseconds per claim with `held` paused deliveries ahead, and with none."""
    from db import deliveries, health
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, "isolation_claim")
    env.add_configs(dsn, "http://127.0.0.1:9/held", 1, event_type="held", prefix="held")
    env.add_configs(dsn, "http://127.0.0.1:9/other", 1, event_type="other", prefix="other")
    pool = ConnectionPool(dsn, size=1)
    rules = health.HealthRules(cap=health.MAX_IN_FLIGHT)  # claims here are never recorded

    def per_claim() -> float:
        env.prefill(dsn, rounds, prefix=f"other{time.monotonic_ns()}", event_type="other")
        started = time.perf_counter()
        claimed = sum(len(deliveries.claim_due(pool, owner="bench", limit=1, rules=rules))
                      for _ in range(rounds))
        assert claimed == rounds, claimed
        return round((time.perf_counter() - started) / rounds * 1000, 3)

    empty = per_claim()
    env.prefill(dsn, held, prefix="held", event_type="held", due_in="-1 hour")
    health.pause(pool, PLATFORM, "held-1", reason="bench")
    behind = per_claim()
    pool.close()
    return {"held": held, "claim_ms_empty": empty, "claim_ms_behind_held": behind}

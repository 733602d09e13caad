"""The load the history benchmark puts on a database: a due backlog, a worker, ingest."""

from __future__ import annotations

import time

import gevent

from bench import environment as env
from db import events
from db.adhoc import sql
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID

CONFIG = "bench-1"  # the config the measured dispatch and ingest deliver to (env.add_configs)


def prefill(dsn: str, count: int, prefix: str) -> None:
    """Add `count` deliveries due now for the benchmark's config, set-based."""
    sql(dsn, "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source)"
                 " SELECT 1, %s || g, %s, json_build_object('n', g, 'text', repeat('x', 100)),"
                 " now(), 'api' FROM generate_series(1, %s) g", (prefix, env.EVENT_TYPE, count))
    sql(dsn, "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, next_attempt_at)"
                 " SELECT 1, %s || g, %s, %s, now() FROM generate_series(1, %s) g",
            (prefix, CONFIG, env.EVENT_TYPE, count))
    sql(dsn, "ANALYZE deliveries", autocommit=True)
    sql(dsn, "SELECT notify_deliveries_due()", autocommit=True)


def listening(dsn: str) -> bool:
    """Tell whether a worker listens for due deliveries on this database (it is ready)."""
    return sql(dsn, "SELECT EXISTS (SELECT FROM pg_stat_activity"
                    " WHERE application_name = 'webhooks-listen' AND datname = current_database())"
               )[0][0]


def outstanding(dsn: str) -> int:
    """Return the benchmark config's deliveries not yet done (cheap: partial indexes only)."""
    return sql(dsn, "SELECT (SELECT count(*) FROM deliveries WHERE status = 'pending'"
                        " AND config_id = %(c)s) + (SELECT count(*) FROM deliveries"
                        " WHERE status = 'delivering' AND config_id = %(c)s)", {"c": CONFIG})[0][0]


def worker(dsn: str):
    """Run one `webhooks worker` with its retention off (the benchmark runs retention)."""
    return env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY="50", WEBHOOKS_RETENTION_PERIOD="0")


class Ingest:
    """Publish events at a steady rate from a greenlet, in batches, as the consumer would."""

    def __init__(self, dsn: str, rate: int) -> None:
        self.pool = ConnectionPool(dsn, size=2, application_name="bench-ingest")
        self.rate = rate
        self.events = 0
        self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        tick = 0.1
        batch = max(1, round(self.rate * tick))
        started = time.monotonic()
        while True:
            due = started + self.events / self.rate
            gevent.sleep(max(0.0, due - time.monotonic()))
            stamp = time.time_ns()
            batch_events = [events.new_event(f"ingest-{stamp}-{n}", env.EVENT_TYPE,
                                             {"n": n, "text": "x" * 100},
                                             tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20)
                            for n in range(batch)]
            with self.pool.transaction() as cursor:
                events.ingest(cursor, batch_events, source="kafka")
            self.events += batch

    def stop(self) -> None:
        self._greenlet.kill()
        self.pool.close()

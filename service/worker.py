"""`webhooks worker`: dispatcher, NOTIFY wake-ups, stale-claim recovery (and, when set up,
the Kafka consumer, retention and the operational events' relay) in one gevent process, with
a warm shutdown on SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable

import gevent
import gevent.event

from db import health, inspection, ordering
from db.errors import DatabaseUnavailable
from db.pool import ConnectionPool
from service.dispatch.dispatcher import Dispatcher
from service.dispatch.recovery import recover_stale_claims
from service.dispatch.wakeup import DueListener
from service.ingest.consumer import STOP_GRACE, Consumer
from service.ingest.operational_relay import OperationalRelay
from service.runtime import early_stop
from service.runtime.gauges import QUEUE_DEPTH_CAP
from service.runtime.retention import apply_retention
from service.runtime.settings import Settings
from service.runtime.status_server import StatusServer
from service.runtime.telemetry import Telemetry

TELEMETRY_FLUSH_FLOOR = 0.5  # seconds the last spans get even when the grace is spent

log = logging.getLogger("webhooks.worker")


def worker_name() -> str:
    """Return a name unique to this process, for claims and logs."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    """Everything `webhooks worker` runs; `start()` returns at once, `stop()` is warm."""

    def __init__(self, settings: Settings, *, telemetry: Telemetry | None = None,
                 name: str | None = None) -> None:
        self.settings = settings
        self.name = name or worker_name()
        self.pool = settings.connection_pool(size=settings.db_pool_size,
                                             application_name="webhooks-worker")
        # A direct connection for the retention lock, when DATABASE_URL may be a pooler's
        self.session_pool = (ConnectionPool(settings.database_direct_url, size=1,
                                            application_name="webhooks-session")
                             if settings.database_direct_url else None)
        self.telemetry = telemetry or Telemetry(otlp_endpoint=settings.otlp_endpoint)
        self.dispatcher = Dispatcher(self.pool, settings, owner=self.name,
                                     telemetry=self.telemetry)
        self.relay = OperationalRelay(self.pool, settings)
        self.listener = (DueListener(settings.session_database_url, self.dispatcher.wake,
                                     self.dispatcher.withdraw, on_announced=self.relay.wake,
                                     pooler=settings.session_pooler)
                         if settings.listen_notify else None)
        self.consumer = (Consumer(self.pool, settings, telemetry=self.telemetry, name=self.name)
                         if settings.kafka_bootstrap_servers else None)
        self.status_server = (StatusServer(settings.metrics_port, self.telemetry, self.pool,
                                           stalled=self._stalled_partitions)
                              if settings.metrics_port else None)
        self._greenlets: list[gevent.Greenlet] = []
        self._stopped = gevent.event.Event()

    def _stalled_partitions(self) -> list[str]:
        """Name the Kafka partitions this worker holds because it cannot decode them."""
        if self.consumer is None:
            return []
        return sorted(f"{s.topic}:{s.partition}@{s.offset}" for s in self.consumer.stalled.values())

    def start(self) -> None:
        # First: an operational tenant nobody has, or a taken port, stops the worker before
        # it claims anything.
        relaying = self.relay.prepare()
        if self.status_server:
            self.status_server.start()
        self.dispatcher.start()
        if self.consumer:
            self.consumer.start()
        if self.listener:
            self._greenlets.append(gevent.spawn(self.listener.run))
        if relaying:
            self._greenlets.append(gevent.spawn(self.relay.run))
        self._greenlets.append(gevent.spawn(
            _every, self.settings.recovery_period, "stale-claim recovery",
            lambda: recover_stale_claims(self.pool, timeout=self.settings.claim_timeout,
                                         telemetry=self.telemetry,
                                         rules=self.dispatcher.rules),
        ))
        self._greenlets.append(gevent.spawn(
            _every, self.settings.queue_metrics_period, "queue metrics", self.measure_queue))
        if self.settings.retention_period > 0:
            self._greenlets.append(gevent.spawn(
                _every, self.settings.retention_period, "retention",
                lambda: apply_retention(self.pool, self.settings, self.telemetry,
                                        session_pool=self.session_pool),
            ))
        log.info("worker started", extra={"worker": self.name,
                                          "concurrency": self.settings.dispatch_concurrency})

    def measure_queue(self) -> None:
        """Refresh the queue and endpoint-health gauges with bounded counts."""
        stats = inspection.stats(self.pool)
        gauges = self.telemetry.gauges
        gauges.queue({status: count.value for status, count in stats.by_status.items()},
                     stats.oldest_due_age_seconds)
        # This worker's own claims per config: summed over the workers, the fleet's (each
        # worker exporting the fleet's count would make a sum count it once per worker).
        gauges.health(in_flight=Counter(c.config_id for c in self.dispatcher.inflight.values()),
                      suppressed=health.held_due(self.pool, cap=QUEUE_DEPTH_CAP))
        gauges.blocked_keys(ordering.count_blocked(self.pool))

    def stop(self) -> None:
        """Stop claiming, let in-flight attempts finish (bounded), hand back the rest."""
        if self._stopped.is_set():
            return
        log.info("worker stopping", extra={"worker": self.name,
                                           "inflight": len(self.dispatcher.inflight)})
        deadline = time.monotonic() + self.settings.shutdown_timeout
        self.dispatcher.stop_claiming()
        if self.consumer:  # commit what is stored and leave the group, within the grace
            self.consumer.stop(min(STOP_GRACE, _left(deadline)))
        if self.listener:
            self.listener.stop()
        gevent.killall(self._greenlets, timeout=min(2.0, _left(deadline)))
        self.dispatcher.stop(_left(deadline))
        if self.status_server:
            self.status_server.stop()
        self.pool.close()
        if self.session_pool:
            self.session_pool.close()
        # What is left of the grace, but at least a moment: the last spans say how it ended.
        self.telemetry.shutdown(max(TELEMETRY_FLUSH_FLOOR, _left(deadline)))
        self._stopped.set()
        log.info("worker stopped", extra={"worker": self.name})

    def run(self) -> int:
        """Run until SIGTERM or SIGINT, then stop warmly; return the exit code."""
        stop_requested = gevent.event.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(signum, stop_requested.set)
        if early_stop.received():  # came while the process was starting up
            stop_requested.set()
        self.start()
        stop_requested.wait()
        self.stop()
        return 0


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _every(period: float, name: str, task: Callable[[], object]) -> None:
    """Run `task` every `period` seconds; a failure is logged and retried next period."""
    while True:
        try:
            task()
        except DatabaseUnavailable as error:  # an outage, a cancelled statement: no traceback
            log.warning("periodic task failed; trying again next period",
                        extra={"task": name, "error": str(error)})
        except Exception:
            log.exception("periodic task failed", extra={"task": name})
        gevent.sleep(period)

"""OpenTelemetry metrics and traces of one process, served in Prometheus format and via OTLP.

Metric names are the contract of SPEC §9. Each process builds one Telemetry; it keeps its own
Prometheus registry so several can live side by side (tests, `webhooks dev`).
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import gevent
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.propagate import inject
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from service import __version__
from service.classify import status_class

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)  # seconds
QUEUE_DEPTH_CAP = 1_000_000
SHUTDOWN_TIMEOUT = 5.0  # seconds shutdown() waits for the collector by default

log = logging.getLogger(__name__)


class Telemetry:
    """Counters, histograms, gauges and spans of the delivery pipeline."""

    def __init__(self, *, otlp_endpoint: str | None = None, role: str = "worker") -> None:
        resource = Resource.create({"service.name": "webhooks", "service.version": __version__,
                                    "webhooks.role": role})
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        reader = PrometheusMetricReader(registry=self.registry, scope_info_enabled=False)
        readers = [reader]
        self.exporting = bool(otlp_endpoint)
        self._tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        if otlp_endpoint:
            readers.append(_otlp_metric_reader(otlp_endpoint))
            self._tracer_provider.add_span_processor(_otlp_span_processor(otlp_endpoint))
        self._meter_provider = MeterProvider(
            shutdown_on_exit=False,
            metric_readers=readers,
            resource=resource,
            views=[View(instrument_name="webhooks_delivery_duration_seconds",
                        aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS))],
        )
        meter = self._meter_provider.get_meter("webhooks", __version__)
        self.tracer = self._tracer_provider.get_tracer("webhooks", __version__)
        self._attempts = meter.create_counter(
            "webhooks_delivery_attempts_total", description="HTTP attempts by outcome")
        self._duration = meter.create_histogram(
            "webhooks_delivery_duration_seconds", unit="s",
            description="Outbound request duration")
        self._transitions = meter.create_counter(
            "webhooks_delivery_transitions_total", description="Delivery state transitions")
        self._recovered = meter.create_counter(
            "webhooks_delivery_claims_recovered_total",
            description="Stale claims recovered after a worker interruption")
        self._replayed = meter.create_counter(
            "webhooks_replayed_deliveries_total",
            description="Deliveries replayed or expedited by an operator")
        self._rejected = meter.create_counter(
            "webhooks_rejected_events_total", description="Broker messages quarantined")
        self._ingested = meter.create_counter(
            "webhooks_ingested_events_total", description="Events stored, by source")
        self._deleted = meter.create_counter(
            "webhooks_retention_deleted_total", description="Rows deleted by retention")
        self._queue_depth_source: Callable[[], int] | None = None
        meter.create_observable_gauge(
            "webhooks_retry_queue_depth", callbacks=[self._observe_queue_depth],
            description=f"Pending deliveries (capped at {QUEUE_DEPTH_CAP:,})")

    def attempts(self, results: Iterable[tuple[str, int, float]]) -> None:
        """Count (outcome, status code, seconds) of finished attempts, one add per kind."""
        kinds: Counter[tuple[str, str]] = Counter()
        for outcome, status_code, duration in results:
            kinds[outcome, status_class(status_code)] += 1
            self._duration.record(duration, {"outcome": outcome})
        for (outcome, status), count in kinds.items():
            self._attempts.add(count, {"outcome": outcome, "status_class": status})

    def transition(self, source: str, target: str, count: int = 1) -> None:
        if count:
            self._transitions.add(count, {"from": source, "to": target})

    def recovered(self, count: int) -> None:
        if count:
            self._recovered.add(count)

    def replayed(self, action: str) -> None:
        self._replayed.add(1, {"action": action})

    def rejected(self, reason: str, count: int = 1) -> None:
        self._rejected.add(count, {"reason": reason})

    def ingested(self, source: str, count: int) -> None:
        if count:
            self._ingested.add(count, {"source": source})

    def deleted(self, kind: str, count: int) -> None:
        if count:
            self._deleted.add(count, {"kind": kind})

    def measure_queue_depth(self, source: Callable[[], int]) -> None:
        """Read the queue-depth gauge from `source` (a database count) at each scrape."""
        self._queue_depth_source = source

    @contextlib.contextmanager
    def attempt_span(self, attributes: dict[str, str | int]) -> Iterator[tuple[Span, dict]]:
        """Trace one attempt; yield its span and the headers (`traceparent`) carrying it.

        Without an exporter no span is recorded anywhere, so none is built: the endpoint
        still gets a fresh, valid, unsampled `traceparent` to correlate its own logs.
        """
        if not self.exporting:
            trace_id = random.getrandbits(128) or 1
            span_id = random.getrandbits(64) or 1
            yield INVALID_SPAN, {"traceparent": f"00-{trace_id:032x}-{span_id:016x}-00"}
            return
        with self.tracer.start_as_current_span(
            "webhook.attempt", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            carrier: dict[str, str] = {}
            inject(carrier)
            yield span, carrier

    def prometheus_text(self) -> bytes:
        return generate_latest(self.registry)

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Flush what waits for the collector and stop, giving up after `timeout` seconds.

        An unreachable collector must not keep a stopping process alive past its grace
        period (the platform would kill it): what is not exported by then is dropped.
        """
        millis = max(1, int(timeout * 1000))

        def flush_and_stop() -> None:
            with contextlib.suppress(Exception):
                self._tracer_provider.force_flush(timeout_millis=millis)
            with contextlib.suppress(Exception):
                self._meter_provider.shutdown(timeout_millis=millis)
            with contextlib.suppress(Exception):
                self._tracer_provider.shutdown()

        stopping = gevent.spawn(flush_and_stop)
        stopping.join(timeout=max(0.0, timeout))
        if not stopping.dead:
            stopping.kill(block=False)
            log.warning("telemetry not flushed within the shutdown grace; the rest is dropped",
                        extra={"timeout_seconds": timeout})

    def _observe_queue_depth(self, options: CallbackOptions) -> list[Observation]:
        if self._queue_depth_source is None:
            return []
        try:
            return [Observation(min(self._queue_depth_source(), QUEUE_DEPTH_CAP))]
        except Exception:
            return []


def _otlp_metric_reader(endpoint: str):
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint.rstrip("/") + "/v1/metrics"))


def _otlp_span_processor(endpoint: str):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces"))

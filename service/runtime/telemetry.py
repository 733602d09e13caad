"""OpenTelemetry metrics and traces of one process, served in Prometheus format and via OTLP.

The counters and histograms are here; the gauges are in service.runtime.gauges, the traces
in service.runtime.tracing.

Each process builds one Telemetry; it keeps its own Prometheus registry so several can live
side by side (tests, `webhooks dev`). Every counter and histogram is exported from the start,
at zero, for each label set known up front, so `rate()`, `increase()` and `absent()` alerts
work on a fresh deployment (docs/operations.md lists them).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
from collections import Counter
from collections.abc import Iterable

import gevent
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from db.vocabulary import AttemptOutcome, CircuitState, PoisonKind, ReplayAction, Status
from service import __version__
from service.policy.classify import status_class
from service.runtime.fork_handlers import without_fork_handlers
from service.runtime.gauges import Gauges
from service.runtime.tracing import Tracing
from service.runtime.zero_histograms import ZeroHistograms

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)  # seconds
SHUTDOWN_TIMEOUT = 5.0  # seconds shutdown() waits for the collector by default

# The label sets each counter starts with, at zero.
ATTEMPT_KINDS = (
    (AttemptOutcome.SUCCESS, "2xx"),
    *((AttemptOutcome.HTTP_ERROR, family) for family in ("1xx", "3xx", "4xx", "5xx")),
    *((outcome, "none") for outcome in (AttemptOutcome.TIMEOUT, AttemptOutcome.NETWORK_ERROR,
                                        AttemptOutcome.BLOCKED, AttemptOutcome.INTERRUPTED)),
)
OUTCOMES = tuple(dict.fromkeys(outcome for outcome, _ in ATTEMPT_KINDS))
TRANSITIONS = (
    (Status.PENDING, Status.DELIVERING), (Status.DELIVERING, Status.SUCCEEDED),
    (Status.DELIVERING, Status.FAILED), (Status.DELIVERING, Status.PENDING),
    (Status.DELIVERING, Status.CANCELLED), (Status.PENDING, Status.CANCELLED),
    (Status.FAILED, Status.PENDING),
)
CIRCUIT_TRANSITIONS = (
    (CircuitState.CLOSED, CircuitState.OPEN), (CircuitState.OPEN, CircuitState.HALF_OPEN),
    (CircuitState.HALF_OPEN, CircuitState.CLOSED), (CircuitState.HALF_OPEN, CircuitState.OPEN),
    (CircuitState.OPEN, CircuitState.CLOSED),  # an operator's resetCircuit
)
DEACTIVATION_REASONS = ("gone",)  # configs the service deactivates: their endpoint said 410
REPLAY_ACTIONS = tuple(action.lower() for action in ReplayAction)
SOURCES = ("kafka", "api")
RETENTION_KINDS = (Status.SUCCEEDED, "failed_or_cancelled", "events", "rejected_events")
API_OUTCOMES = ("ok", "client_error", "server_error")

log = logging.getLogger(__name__)


class PlainLabels:
    """A counter or histogram whose label values are always plain text. OpenTelemetry tells
    series apart by their labels' types as well as their text: a status given once as a word
    of the vocabulary (an enum member) and once as the text read from a row would otherwise be
    exported as two series with the same labels."""

    def __init__(self, instrument) -> None:
        self._instrument = instrument

    def add(self, amount: float, attributes: dict | None = None) -> None:
        self._instrument.add(amount, _plain(attributes))

    def record(self, amount: float, attributes: dict | None = None) -> None:
        self._instrument.record(amount, _plain(attributes))


def _plain(attributes: dict | None) -> dict | None:
    if not attributes:
        return attributes
    return {name: value.value if isinstance(value, enum.Enum) else value
            for name, value in attributes.items()}


class Telemetry:
    """Counters, histograms, gauges and spans of the delivery pipeline."""

    def __init__(self, *, otlp_endpoint: str | None = None, role: str = "worker") -> None:
        resource = Resource.create({"service.name": "webhooks", "service.version": __version__,
                                    "webhooks.role": role})
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        sdk_registry = CollectorRegistry()  # read through ZeroHistograms, never served alone
        reader = PrometheusMetricReader(registry=sdk_registry, scope_info_enabled=False)
        self._histograms = ZeroHistograms(sdk_registry, DURATION_BUCKETS)
        self.registry.register(self._histograms)
        self.tracing = Tracing(resource, otlp_endpoint)
        with without_fork_handlers():
            readers = [reader]
            if otlp_endpoint:
                readers.append(_otlp_metric_reader(otlp_endpoint))
            self._meter_provider = MeterProvider(
                shutdown_on_exit=False,
                metric_readers=readers,
                resource=resource,
                views=[View(instrument_name=name,
                            aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS))
                       for name in ("webhooks_delivery_duration_seconds",
                                    "webhooks_api_request_duration_seconds")],
            )
        meter = self._meter_provider.get_meter("webhooks", __version__)
        self.counter_names: list[str] = []
        counter = functools.partial(self._counter, meter)
        self._attempts = counter(
            "webhooks_delivery_attempts_total", "HTTP attempts by outcome",
            [{"outcome": outcome, "status_class": family} for outcome, family in ATTEMPT_KINDS])
        self._duration = PlainLabels(meter.create_histogram(
            "webhooks_delivery_duration_seconds", unit="s",
            description="Outbound request duration"))
        self._transitions = counter(
            "webhooks_delivery_transitions_total", "Delivery state transitions",
            [{"from": source, "to": target} for source, target in TRANSITIONS])
        self._recovered = counter(
            "webhooks_delivery_claims_recovered_total",
            "Stale claims recovered after a worker interruption", [{}])
        self._replayed = counter(
            "webhooks_replayed_deliveries_total",
            "Deliveries replayed or expedited by an operator",
            [{"action": action} for action in REPLAY_ACTIONS])
        self._rejected = counter(
            "webhooks_rejected_events_total", "Broker messages quarantined",
            [{"reason": reason} for reason in PoisonKind])
        self._ingested = counter(
            "webhooks_ingested_events_total", "Events stored, by source",
            [{"source": source} for source in SOURCES])
        self._filtered_out = counter(
            "webhooks_events_filtered_out_total",
            "Deliveries not created because a config's filter rejected the event (one per "
            "event and config)", [{}])
        self._deleted = counter(
            "webhooks_retention_deleted_total", "Rows deleted by retention",
            [{"kind": kind} for kind in RETENTION_KINDS])
        self._circuit = counter(
            "webhooks_circuit_transitions_total", "Circuit breaker transitions of configs",
            [{"from": source, "to": target} for source, target in CIRCUIT_TRANSITIONS])
        self._gone = counter(
            "webhooks_configs_deactivated_total",
            "Configs deactivated by the service, by reason",
            [{"reason": reason} for reason in DEACTIVATION_REASONS])
        self._api_requests = counter(  # its series start with api_operations()
            "webhooks_api_requests_total",
            "GraphQL requests by root field (operation) and outcome", [])
        self._api_duration = PlainLabels(meter.create_histogram(
            "webhooks_api_request_duration_seconds", unit="s",
            description="GraphQL request duration by root field (operation)"))
        self.gauges = Gauges(meter)
        self._start_at_zero()

    def _counter(self, meter, name: str, description: str, start: list[dict[str, str]]):
        """Create a counter exported from the start, at zero, for each label set of `start`
        (every counter names its series here, so none can be forgotten)."""
        created = PlainLabels(meter.create_counter(name, description=description))
        for labels in start:
            created.add(0, labels)
        self.counter_names.append(name)
        return created

    def _start_at_zero(self) -> None:
        """Export every histogram series known up front, at zero (counters start as made)."""
        self._histograms.expect("webhooks_delivery_duration_seconds", "outcome", OUTCOMES,
                                "Outbound request duration")

    def api_operations(self, operations: Iterable[str]) -> None:
        """Export the API's counters and histogram at zero for each of `operations`."""
        names = tuple(operations)
        for operation in names:
            for outcome in API_OUTCOMES:
                self._api_requests.add(0, {"operation": operation, "outcome": outcome})
        self._histograms.expect("webhooks_api_request_duration_seconds", "operation", names,
                                "GraphQL request duration by root field (operation)")

    def api_request(self, operation: str, outcome: str, seconds: float) -> None:
        """Count one GraphQL request and its duration."""
        self._api_requests.add(1, {"operation": operation, "outcome": outcome})
        self._api_duration.record(seconds, {"operation": operation})

    def attempts(self, results: Iterable[tuple[str, int, float]]) -> None:
        """Count (outcome, status code, seconds) of finished attempts, one add per kind."""
        kinds: Counter[tuple[str, str]] = Counter()
        for outcome, status_code, duration in results:
            kinds[outcome, status_class(status_code)] += 1
            self._duration.record(duration, {"outcome": outcome})
        for (outcome, status), count in kinds.items():
            self._attempts.add(count, {"outcome": outcome, "status_class": status})

    def transition(self, source: Status, target: Status, count: int = 1) -> None:
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

    def filtered_out(self, count: int) -> None:
        if count:
            self._filtered_out.add(count)

    def deleted(self, kind: str, count: int) -> None:
        if count:
            self._deleted.add(count, {"kind": kind})

    def circuit_transition(self, source: CircuitState | str, target: CircuitState | str) -> None:
        self._circuit.add(1, {"from": source, "to": target})

    def config_deactivated(self, reason: str) -> None:
        self._gone.add(1, {"reason": reason})

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
                self.tracing.flush(millis)
            with contextlib.suppress(Exception):
                self._meter_provider.shutdown(timeout_millis=millis)
            with contextlib.suppress(Exception):
                self.tracing.shutdown()

        stopping = gevent.spawn(flush_and_stop)
        stopping.join(timeout=max(0.0, timeout))
        if not stopping.dead:
            stopping.kill(block=False)
            log.warning("telemetry not flushed within the shutdown grace; the rest is dropped",
                        extra={"timeout_seconds": timeout})

def _otlp_metric_reader(endpoint: str):
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint.rstrip("/") + "/v1/metrics"))

"""Metrics on /metrics from the first second, queue gauges, and OTLP export of metrics and
traces."""

from datetime import UTC, datetime, timedelta

import requests
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from service.local.ports import reserve_port
from service.policy.trace_context import TraceContext
from service.runtime.telemetry import Telemetry
from service.worker import Worker
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

SPEC_METRICS = (
    "webhooks_delivery_attempts_total",
    "webhooks_delivery_duration_seconds",
    "webhooks_retry_queue_depth",
    "webhooks_replayed_deliveries_total",
    "webhooks_delivery_transitions_total",
    "webhooks_delivery_claims_recovered_total",
)


def test_worker_serves_spec_metrics_on_its_metrics_port(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(503))
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    port = reserve_port()
    worker = start_worker(metrics_port=port, min_backoff=3600.0, queue_metrics_period=0.1)
    wait_until(lambda: make.row(delivery_id)["attempt_count"] == 1)
    worker.telemetry.replayed("expedited")
    worker.telemetry.recovered(1)
    attempts = 'webhooks_delivery_attempts_total{outcome="http_error",status_class="5xx"} 1.0'
    text = wait_until(lambda: attempts in (t := requests.get(
        f"http://127.0.0.1:{port}/metrics", timeout=PATIENCE).text)
        and "\nwebhooks_retry_queue_depth 1.0" in t and t)
    for name in SPEC_METRICS:
        assert f"\n{name}" in text, name
    assert 'webhooks_delivery_transitions_total{from="delivering",to="pending"} 1.0' in text
    assert 'webhooks_delivery_transitions_total{from="pending",to="delivering"} 1.0' in text
    assert "\nwebhooks_retry_queue_depth 1.0" in text
    assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=PATIENCE).status_code == 200
    assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=PATIENCE).status_code == 200
    assert requests.get(f"http://127.0.0.1:{port}/nope", timeout=PATIENCE).status_code == 404


def test_otlp_export_carries_metrics_and_an_attempt_span(make, receiver_factory,
                                                         start_worker):
    collector = receiver_factory(lambda request: Reply(200, body=b""))
    endpoint = receiver_factory()
    make.config(endpoint=endpoint.url)
    event_id, (delivery_id,) = make.event()
    worker = start_worker(otlp_endpoint=f"http://127.0.0.1:{collector.port}")
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    worker.stop()  # flushes both exporters
    by_path = {}
    for request in collector.requests:
        by_path.setdefault(request.path, []).append(request)
    assert set(by_path) == {"/v1/metrics", "/v1/traces"}
    traces = ExportTraceServiceRequest()
    for request in by_path["/v1/traces"]:
        traces.MergeFromString(request.body)
    spans = [span for resource in traces.resource_spans for scope in resource.scope_spans
             for span in scope.spans]
    (span,) = [s for s in spans if s.name == "webhook.attempt"]
    attributes = {a.key: a.value for a in span.attributes}
    assert attributes["webhooks.delivery_id"].int_value == delivery_id
    assert attributes["webhooks.event_id"].string_value == event_id
    (sent,) = endpoint.requests
    assert span.trace_id.hex() in sent.headers["traceparent"]
    metrics = ExportMetricsServiceRequest()
    for request in by_path["/v1/metrics"]:
        metrics.MergeFromString(request.body)
    names = {m.name for resource in metrics.resource_metrics
             for scope in resource.scope_metrics for m in scope.metrics}
    assert "webhooks_delivery_attempts_total" in names


# Series an alert may use on a fresh deployment, before anything happened.
ZERO_AT_START = [
    ("webhooks_delivery_attempts_total", {"outcome": "success", "status_class": "2xx"}),
    ("webhooks_delivery_attempts_total", {"outcome": "http_error", "status_class": "5xx"}),
    ("webhooks_delivery_attempts_total", {"outcome": "http_error", "status_class": "4xx"}),
    ("webhooks_delivery_attempts_total", {"outcome": "timeout", "status_class": "none"}),
    ("webhooks_delivery_attempts_total", {"outcome": "network_error", "status_class": "none"}),
    ("webhooks_delivery_attempts_total", {"outcome": "blocked", "status_class": "none"}),
    ("webhooks_delivery_attempts_total", {"outcome": "interrupted", "status_class": "none"}),
    ("webhooks_delivery_duration_seconds_count", {"outcome": "interrupted"}),
    ("webhooks_delivery_duration_seconds_count", {"outcome": "success"}),
    ("webhooks_delivery_duration_seconds_count", {"outcome": "http_error"}),
    ("webhooks_delivery_duration_seconds_bucket", {"outcome": "timeout", "le": "+Inf"}),
    ("webhooks_delivery_transitions_total", {"from": "pending", "to": "delivering"}),
    ("webhooks_delivery_transitions_total", {"from": "delivering", "to": "succeeded"}),
    ("webhooks_delivery_transitions_total", {"from": "delivering", "to": "failed"}),
    ("webhooks_delivery_transitions_total", {"from": "delivering", "to": "pending"}),
    ("webhooks_delivery_transitions_total", {"from": "pending", "to": "cancelled"}),
    ("webhooks_delivery_transitions_total", {"from": "failed", "to": "pending"}),
    ("webhooks_delivery_claims_recovered_total", {}),
    ("webhooks_replayed_deliveries_total", {"action": "replayed"}),
    ("webhooks_replayed_deliveries_total", {"action": "expedited"}),
    ("webhooks_rejected_events_total", {"reason": "invalid_json"}),
    ("webhooks_rejected_events_total", {"reason": "unstorable"}),
    ("webhooks_ingested_events_total", {"source": "kafka"}),
    ("webhooks_ingested_events_total", {"source": "api"}),
    ("webhooks_retention_deleted_total", {"kind": "succeeded"}),
    ("webhooks_circuit_transitions_total", {"from": "closed", "to": "open"}),
    ("webhooks_circuit_transitions_total", {"from": "half_open", "to": "closed"}),
    ("webhooks_circuit_transitions_total", {"from": "open", "to": "closed"}),
    ("webhooks_configs_deactivated_total", {"reason": "gone"}),
]


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Return every sample of a Prometheus text by (name, labels)."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_a_fresh_worker_exports_every_counter_and_histogram_at_zero(start_worker):
    port = reserve_port()
    start_worker(metrics_port=port)
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=PATIENCE).text
    found = samples(text)
    for name, labels in ZERO_AT_START:
        assert found.get((name, frozenset(labels.items()))) == 0.0, (name, labels)


def test_every_counter_the_service_defines_is_exported_from_the_start():
    """The list comes from the code: a counter added without its starting series fails."""
    telemetry = Telemetry()
    telemetry.api_operations(["deliveries"])  # what the web process does at start
    exported = {name for name, _ in samples(telemetry.prometheus_text().decode())}
    assert len(telemetry.counter_names) >= 10
    for name in telemetry.counter_names:
        assert name in exported, name
    for name in ("webhooks_delivery_duration_seconds_count",
                 "webhooks_api_request_duration_seconds_count"):
        assert name in exported, name


def test_queue_gauges_count_each_status_and_age_the_oldest_due_delivery(make, settings):
    config = make.config()
    now = datetime.now(UTC)
    make.delivery(config, next_attempt_at=now - timedelta(seconds=300))
    make.delivery(config, next_attempt_at=now + timedelta(hours=1))
    make.delivery(config, status="failed", next_attempt_at=None)
    worker = Worker(settings)  # not started: nothing claims them while they are counted
    try:
        worker.measure_queue()
        waited = (datetime.now(UTC) - now).total_seconds()
        found = samples(worker.telemetry.prometheus_text().decode())
    finally:
        worker.pool.close()
    by_status = {status: found[("webhooks_deliveries", frozenset({("status", status)}))]
                 for status in ("pending", "delivering", "succeeded", "failed", "cancelled")}
    assert by_status == {"pending": 2, "delivering": 0, "succeeded": 0, "failed": 1,
                         "cancelled": 0}
    assert found[("webhooks_retry_queue_depth", frozenset())] == 2
    age = found[("webhooks_oldest_due_delivery_age_seconds", frozenset())]
    assert 299 <= age <= 301 + waited


def test_nothing_due_reads_as_an_oldest_due_age_of_zero(make, settings):
    make.delivery(make.config(), next_attempt_at=datetime.now(UTC) + timedelta(hours=1))
    worker = Worker(settings)
    try:
        worker.measure_queue()
        found = samples(worker.telemetry.prometheus_text().decode())
    finally:
        worker.pool.close()
    assert found[("webhooks_oldest_due_delivery_age_seconds", frozenset())] == 0
    assert found[("webhooks_deliveries", frozenset({("status", "pending")}))] == 1


def test_without_an_exporter_an_attempt_still_continues_the_producers_trace():
    telemetry = Telemetry()
    producer = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b")
    with telemetry.tracing.attempt_span({}, parent=producer) as (_, headers):
        version, trace_id, span_id, flags = headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", producer.trace_id, "01")
    assert span_id not in ("00f067aa0ba902b7", "0" * 16)
    assert headers["tracestate"] == "a=b"
    with telemetry.tracing.attempt_span({}, parent=TraceContext(producer.parent)) as (_, headers):
        assert set(headers) == {"traceparent"}
    with telemetry.tracing.attempt_span({}) as (_, headers):
        version, trace_id, _, flags = headers["traceparent"].split("-")
    assert (set(headers), flags) == ({"traceparent"}, "00")
    assert trace_id != producer.trace_id


def test_every_circuit_transition_counted_anywhere_starts_at_zero():
    """The breaker's states are three: every move between two of them that the code can
    count (a reset by an operator included) has its series from the start."""
    telemetry = Telemetry()
    exported = {labels for name, labels in samples(telemetry.prometheus_text().decode())
                if name == "webhooks_circuit_transitions_total"}
    for source, target in [("closed", "open"), ("open", "half_open"), ("half_open", "closed"),
                           ("half_open", "open"), ("open", "closed")]:
        assert frozenset({"from": source, "to": target}.items()) in exported, (source, target)

"""Metrics with the names of SPEC §9 on /metrics, and OTLP export of metrics and traces."""

import requests
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from service.local_postgres import free_port
from tests.helpers import wait_until
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
    port = free_port()
    worker = start_worker(metrics_port=port, min_backoff=3600.0)
    wait_until(lambda: make.row(delivery_id)["attempt_count"] == 1)
    worker.telemetry.replayed("expedited")
    worker.telemetry.recovered(1)
    attempts = 'webhooks_delivery_attempts_total{outcome="http_error",status_class="5xx"'
    text = wait_until(lambda: attempts in (t := requests.get(
        f"http://127.0.0.1:{port}/metrics", timeout=5).text) and t)
    for name in SPEC_METRICS:
        assert f"\n{name}" in text, name
    assert 'webhooks_delivery_transitions_total{from="delivering",to="pending"} 1.0' in text
    assert 'webhooks_delivery_transitions_total{from="pending",to="delivering"} 1.0' in text
    assert "\nwebhooks_retry_queue_depth 1.0" in text
    assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
    assert requests.get(f"http://127.0.0.1:{port}/nope", timeout=5).status_code == 404


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

"""Real producers on the embedded broker, kafka-python and librdkafka (confluent-kafka): message
keys, headers and record timestamps are kept, and a producer's trace context continues into
every attempt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from db import deliveries
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from tests.helpers import wait_until
from tests.kafka import LIBRARIES, consumer_settings
from tests.kafka_events import stored_events
from tests.receivers import Reply

PRODUCER_TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PRODUCER_TRACE_ID, PRODUCER_SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
RECORD_TIME_MS = 1_672_617_600_123  # 2023-01-02T00:00:00.123Z

pytestmark = pytest.mark.parametrize("library", LIBRARIES)


def test_keys_headers_and_record_timestamps(library, make, producers, topic, start_worker):
    producer = producers(library)
    producer.send(topic.name, {"type": "t", "id": "keyed"}, key=b"customer-42",
                  headers=[("source", b"billing"), ("binary", b"\xff\x00\xfe"),
                           ("empty", b""), ("traceparent", b"not a trace context")],
                  timestamp_ms=RECORD_TIME_MS)
    producer.send(topic.name, {"type": "t", "id": "binary-key"}, key=b"\x00\xff",
                  timestamp_ms=RECORD_TIME_MS)
    producer.send(topic.name, {"type": "t", "id": "unkeyed"}, timestamp_ms=RECORD_TIME_MS)
    producer.send(topic.name, {"type": "t", "id": "dated", "date": "2024-05-06T07:08:09Z"},
                  key=b"k", timestamp_ms=RECORD_TIME_MS)
    producer.flush()
    start_worker(**consumer_settings(topic))

    events = wait_until(lambda: len(e := stored_events(make)) == 4 and e)
    record_time = datetime(2023, 1, 2, 0, 0, 0, 123000, tzinfo=UTC)
    assert {id: (e["key"], e["occurred_at"], e["trace_parent"]) for id, e in events.items()} == {
        "keyed": (b"customer-42", record_time, None),
        "binary-key": (b"\x00\xff", record_time, None),
        "unkeyed": (None, record_time, None),
        "dated": (b"k", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC), None),
    }
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id, ordering_key FROM events ORDER BY id")
        # a key that is not UTF-8 text is kept as sent and orders by its encoded form
        assert dict(cursor.fetchall()) == {"keyed": "customer-42", "binary-key": "~b64:AP8=",
                                           "unkeyed": None, "dated": "k"}
    assert make.count("SELECT count(*) FROM rejected_events") == 0


def test_trace_context_continues_into_every_attempt(library, make, producers, topic,
                                                    receiver_factory, start_worker):
    replies = iter([Reply(503), Reply(400)])  # a retry, then failed: replayed below
    endpoint = receiver_factory(lambda request: next(replies, Reply(200)))
    collector = receiver_factory(lambda request: Reply(200, body=b""))
    make.config(endpoint=endpoint.url, event_types=["t"])
    producer = producers(library)
    producer.send(topic.name, {"type": "t", "id": "traced"}, key=b"order-7",
                  headers=[("traceparent", PRODUCER_TRACE.encode()),
                           ("tracestate", b"vendor=opaque"), ("other", b"ignored")])
    producer.flush()
    worker = start_worker(**consumer_settings(topic), min_backoff=0.05, max_backoff=0.05,
                          otlp_endpoint=f"http://127.0.0.1:{collector.port}")

    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = 'failed'"))
    (delivery_id,) = _delivery_ids(make)
    with make.pool.transaction() as cursor:
        deliveries.replay(cursor, PLATFORM, delivery_id)
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    worker.stop()  # flushes the spans

    sent = endpoint.requests
    assert len(sent) == 3  # first attempt, its retry, and the replay
    parents = [request.headers["traceparent"].split("-") for request in sent]
    assert {(version, trace, flags) for version, trace, _, flags in parents} == {
        ("00", PRODUCER_TRACE_ID, "01")}
    attempt_spans = {span_id for _, _, span_id, _ in parents}
    assert len(attempt_spans) == 3 and PRODUCER_SPAN_ID not in attempt_spans
    assert {request.headers["tracestate"] for request in sent} == {"vendor=opaque"}
    spans = _exported_spans(collector)
    assert {(s.trace_id.hex(), s.parent_span_id.hex(), s.span_id.hex()) for s in spans} == {
        (PRODUCER_TRACE_ID, PRODUCER_SPAN_ID, span_id) for span_id in attempt_spans}
    for span in spans:  # OpenTelemetry's messaging conventions: the attempt processes it
        attributes = {a.key: a.value.string_value for a in span.attributes}
        assert {key: attributes.get(key) for key in (
            "messaging.system", "messaging.operation.type", "messaging.message.id",
            "messaging.kafka.message.key")} == {
            "messaging.system": "kafka", "messaging.operation.type": "process",
            "messaging.message.id": "traced", "messaging.kafka.message.key": "order-7"}
    event = stored_events(make)["traced"]
    assert (event["trace_parent"], event["trace_state"]) == (PRODUCER_TRACE, "vendor=opaque")


def _delivery_ids(make) -> list[int]:
    return [row[0] for row in make.pool.execute(
        "deliveries_of_event", {"tenant_id": DEFAULT_TENANT_ID, "event_id": "traced"})]


def _exported_spans(collector) -> list:
    traces = ExportTraceServiceRequest()
    for request in collector.requests:
        if request.path == "/v1/traces":
            traces.MergeFromString(request.body)
    return [span for resource in traces.resource_spans for scope in resource.scope_spans
            for span in scope.spans if span.name == "webhook.attempt"]

"""Kafka ingestion in a worker: events, fan-out, redelivery, poison and refused values."""

import json

from db import rejected
from db.events import NewEvent
from service.ingest import batches
from service.ingest.envelope import parse
from tests.helpers import wait_until
from tests.kafka import consumer_settings


def _count(make, table):
    return make.count(f"SELECT count(*) FROM {table}")


def test_produced_events_reach_every_subscribed_endpoint(make, receiver, topic, start_worker):
    make.config(endpoint=receiver.url, event_types=["order.created"])
    make.config(endpoint=receiver.url, event_types=["order.created", "order.paid"])
    make.config(endpoint=receiver.url, event_types=["other"])
    topic.send({"type": "order.created", "id": "ord_1", "payload": {"total": 5},
                "date": "2024-05-06T07:08:09Z"})
    topic.send({"type": "order.paid", "idempotencyKey": "pay_1", "data": {"paid": True}})
    partition, offset = topic.send({"type": "order.created", "sku": "x"})
    start_worker(**consumer_settings(topic))

    requests = receiver.wait_for(5)
    bodies = sorted((json.loads(r.body) for r in requests), key=lambda b: (b["id"], b["type"]))
    derived = f"{topic.name}:{partition}:{offset}"
    assert [(b["id"], b["type"], b["data"]) for b in bodies] == sorted([
        ("ord_1", "order.created", {"total": 5}),
        ("ord_1", "order.created", {"total": 5}),
        ("pay_1", "order.paid", {"paid": True}),
        (derived, "order.created", {"type": "order.created", "sku": "x"}),
        (derived, "order.created", {"type": "order.created", "sku": "x"}),
    ])
    assert {b["timestamp"] for b in bodies if b["id"] == "ord_1"} == {"2024-05-06T07:08:09.000Z"}
    assert make.count("SELECT count(*) FROM events WHERE source = 'kafka'") == 3


def test_offsets_are_committed_after_the_events_are_stored(make, topic, start_worker):
    topic.send_many([{"type": "t", "n": n} for n in range(40)])
    kafka = consumer_settings(topic)
    worker = start_worker(**kafka)
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
    assert _count(make, "events") == 40
    assert worker.consumer.progress.events == 40


def test_reading_the_same_offsets_again_creates_nothing(make, receiver, topic, start_worker):
    make.config(endpoint=receiver.url, event_types=["t"])
    topic.send_many([{"type": "t", "n": n} for n in range(30)])
    topic.send(b"not json", raw=True)
    kafka = consumer_settings(topic)
    first = start_worker(**kafka)
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
    receiver.wait_for(30)
    first.stop()

    again_kafka = consumer_settings(topic)  # a new group reads from the start
    again = start_worker(**again_kafka)
    wait_until(lambda: topic.committed(again_kafka["kafka_group_id"]) == topic.ends())
    assert again.consumer.progress.messages >= 31  # more if a rebalance read a batch twice
    assert (again.consumer.progress.events, again.consumer.progress.rejected) == (0, 0)
    assert (_count(make, "events"), _count(make, "deliveries")) == (30, 30)
    assert rejected.count(make.pool) == 1
    assert len(receiver.requests) == 30


def test_poison_messages_are_quarantined_while_good_ones_flow(make, receiver, topic,
                                                              start_worker):
    make.config(endpoint=receiver.url, event_types=["good"])
    poison = {
        "random bytes": (b"\x8f\x00\xff\x13garbage", "invalid_utf8: "),
        "not JSON": (b"{'type': 'good'}", "invalid_json: "),
        "not an object": (b'["good"]', "not_an_object: "),
        "no type": (b'{"payload": {}}', "no_type: "),
        "oversized": (json.dumps({"type": "good", "pad": "x" * 3000}).encode(), "too_large: "),
        "invalid UTF-8": (b'{"type": "g\xc3\x28ood"}', "invalid_utf8: "),
        "tombstone": (None, "tombstone: "),
        "bad id": (b'{"type": "good", "id": {"a": 1}}', "invalid_id: "),
    }
    positions = {}
    topic.send({"type": "good", "id": "first"}, partition=0)
    for name, (raw, _) in poison.items():
        positions[name] = topic.send(raw, raw=True, partition=0)
    topic.send({"type": "good", "id": "last"}, partition=0)
    kafka = consumer_settings(topic)
    worker = start_worker(**kafka, max_payload=2048)

    requests = receiver.wait_for(2)
    assert sorted(json.loads(r.body)["id"] for r in requests) == ["first", "last"]
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == {0: 10})
    stored = {(r.partition, r.offset): r for r in rejected.page(make.pool, limit=100)}
    assert len(stored) == len(poison)
    for name, (raw, reason) in poison.items():
        row = stored[positions[name]]
        assert (row.topic, row.raw) == (topic.name, raw), name
        assert row.reason.startswith(reason), (name, row.reason)
    metrics = worker.telemetry.prometheus_text().decode()
    assert _metric(metrics, "webhooks_rejected_events_total", reason="invalid_utf8") == 2
    assert _metric(metrics, "webhooks_rejected_events_total", reason="tombstone") == 1
    assert _metric(metrics, "webhooks_ingested_events_total", source="kafka") == 2


def test_values_the_database_refuses_are_quarantined_alone(make, receiver, topic, start_worker,
                                                           monkeypatch):
    def parse_with_a_broken_payload(value, **position):
        event = parse(value, **position)
        if event.id.startswith("broken"):  # passes every check here, yet PostgreSQL refuses it
            return NewEvent(event.id, event.type, '{"no": json}', event.tenant_id,
                            event.occurred_at)
        return event

    monkeypatch.setattr(batches, "parse", parse_with_a_broken_payload)
    make.config(endpoint=receiver.url, event_types=["t"])
    values = [{"type": "t", "id": f"e{n}"} for n in range(20)]
    values[3]["id"], values[13]["id"] = "broken-1", "broken-2"
    topic.send_many(values)
    topic.send(None)  # and a poison message
    kafka = consumer_settings(topic)
    worker = start_worker(**kafka)

    receiver.wait_for(18)
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
    rows = sorted(rejected.page(make.pool, limit=10), key=lambda r: r.reason)
    assert [r.reason.split(":")[0] for r in rows] == ["tombstone", "unstorable", "unstorable"]
    assert rows[1].reason.startswith("unstorable: invalid input syntax for type json")
    assert sorted(json.loads(r.raw)["id"] for r in rows[1:]) == ["broken-1", "broken-2"]
    assert _count(make, "events") == 18
    assert worker.consumer.progress.rejected == 3


def _metric(text, name, **labels):
    """Return the value of the Prometheus sample `name` that carries `labels`."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels}")

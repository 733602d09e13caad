"""One event from ingest to a signed POST at a real endpoint."""

import json
import re
from datetime import datetime

import pytest
from standardwebhooks.webhooks import Webhook

from db import events
from db.errors import InvalidInput
from db.scope import DEFAULT_TENANT_ID
from tests.helpers import wait_until


def test_published_event_arrives_signed_and_is_recorded(make, receiver, start_worker):
    config = make.config(endpoint=receiver.url)
    event_id, (delivery_id,) = make.event(payload={"order": 42, "note": "é"})
    start_worker()

    (request,) = receiver.wait_for(1)
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("webhooks/")
    webhook_id = make.row(delivery_id)["webhook_id"]
    assert re.fullmatch(r"msg_[0-9a-f]{44}", webhook_id)
    assert request.headers["webhook-id"] == webhook_id
    assert request.headers["webhook-attempt"] == "1"
    assert request.headers["webhook-replay-generation"] == "0"
    assert request.headers["traceparent"].startswith("00-")
    body = Webhook(make.secrets[config.id]).verify(request.body, request.headers)
    assert body["id"] == event_id
    assert body["type"] == "order.created"
    assert body["data"] == {"order": 42, "note": "é"}
    assert datetime.fromisoformat(body["timestamp"].replace("Z", "+00:00")).tzinfo
    assert list(json.loads(request.body)) == ["id", "type", "timestamp", "data"]

    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r)
    assert row["attempt_count"] == 1
    assert row["last_status_code"] == 200
    assert row["claim_token"] is None and row["next_attempt_at"] is None
    (attempt,) = make.attempts(delivery_id)
    assert attempt["outcome"] == "success"
    assert attempt["status_code"] == 200
    assert attempt["endpoint"] == receiver.url
    assert attempt["response_excerpt"] == "ok"
    assert attempt["attempt_number"] == 1


def test_fan_out_reaches_every_active_subscriber_once(make, receiver_factory, start_worker):
    receivers = [receiver_factory() for _ in range(3)]
    make.config(endpoint=receivers[0].url, event_types=["a", "b"])
    make.config(endpoint=receivers[1].url, event_types=["a"])
    make.config(endpoint=receivers[2].url, event_types=["a"], active=False)
    make.config(endpoint=receivers[2].url, event_types=["b"])
    make.config(endpoint=receivers[2].url, event_types=["a.sub"])
    _, delivery_ids = make.event(type="a", id="evt-fan")
    assert len(delivery_ids) == 2
    _, again = make.event(type="a", id="evt-fan", payload={"changed": True})
    assert again == delivery_ids
    start_worker()
    receivers[0].wait_for(1)
    receivers[1].wait_for(1)
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")
               == 2)
    assert receivers[2].requests == []
    assert json.loads(receivers[0].requests[0].body)["data"] == {"n": "evt-fan"}


def test_payload_is_stored_once_per_event(make):
    for n in range(3):
        make.config(event_types=["shared"], name=f"c{n}")
    _, ids = make.event(type="shared", id="evt-once")
    assert len(ids) == 3
    assert make.count("SELECT count(*) FROM events") == 1


def test_batch_ingest_counts_and_ignores_repeats(pool, make):
    make.config(event_types=["t"])
    batch = [events.new_event(f"e{n}", "t", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                              max_payload=1000) for n in range(5)]
    with pool.transaction() as cursor:
        counts = events.ingest(cursor, batch + batch[:2], source="kafka")
    assert (counts.events_created, counts.deliveries_created) == (5, 5)
    with pool.transaction() as cursor:
        counts = events.ingest(cursor, batch, source="kafka")
    assert (counts.events_created, counts.deliveries_created) == (0, 0)


def test_an_id_repeated_within_one_batch_keeps_its_first_occurrence(pool, make):
    make.config(event_types=["t", "u"])
    batch = [events.new_event("same", "t", {"n": 0}, tenant_id=DEFAULT_TENANT_ID, max_payload=1000)]
    batch += [events.new_event(f"other-{n}", "t", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                               max_payload=1000) for n in range(50)]
    batch += [events.new_event("same", "u", {"n": 1}, tenant_id=DEFAULT_TENANT_ID,
                               max_payload=1000)]
    for ordered in (batch, batch[::-1]):
        with pool.transaction() as cursor:
            cursor.execute("TRUNCATE events, deliveries, delivery_attempts")
            counts = events.ingest(cursor, ordered, source="kafka")
            assert (counts.events_created, counts.deliveries_created) == (51, 51)
            cursor.execute("SELECT type, payload::text FROM events WHERE id = 'same'")
            expected = next(e for e in ordered if e.id == "same")
            assert cursor.fetchone() == (expected.type, expected.payload)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": ""}, "type"),
        ({"type": 5}, "type"),
        ({"id": ""}, "id"),
        ({"id": "x" * 300}, "id"),
        ({"payload": {"big": "x" * 2000}}, "over the limit"),
        ({"payload": float("nan")}, "payload"),
        ({"payload": {1, 2}}, "payload"),
    ],
)
def test_bad_events_are_refused_with_a_clear_error(fields, message):
    args = {"id": "e", "type": "t", "payload": {}, **fields}
    with pytest.raises(InvalidInput, match=message):
        events.new_event(args["id"], args["type"], args["payload"], tenant_id=DEFAULT_TENANT_ID,
                         max_payload=1000)


def test_idle_dispatcher_wakes_on_notify(make, receiver, start_worker):
    make.config(endpoint=receiver.url)
    start_worker(retry_period=3600.0)  # no poll comes in time: only NOTIFY can wake it
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = 'pending'") == 0)
    make.event()
    receiver.wait_for(1)


def test_keep_alive_connections_are_reused(make, receiver, start_worker):
    make.config(endpoint=receiver.url)
    start_worker(dispatch_concurrency=2)
    for _ in range(20):
        make.event()
    receiver.wait_for(20)
    assert receiver.connections <= 4

"""Each attempt keeps the request headers it sent: the ones a real receiver got, less those
every request carries alike."""

from __future__ import annotations

import dataclasses

from db import configs, events, inspection
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from tests.helpers import wait_until
from tests.receivers import Reply

PRODUCER_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
PRODUCER_STATE = "vendor=opaque"
# Headers every request carries with one value, and those the HTTP client adds itself
NOT_KEPT = {"content-type", "user-agent", "accept-encoding", "content-length", "host"}


def test_each_attempt_keeps_the_headers_the_receiver_got(make, receiver_factory, start_worker):
    answers = iter([Reply(503), Reply(200)])
    receiver = receiver_factory(lambda request: next(answers))
    config = make.config(endpoint=receiver.url)
    configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=3600)  # two signatures
    event = events.new_event("evt-headers", "order.created", {"n": 1}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1024)
    event = dataclasses.replace(event, trace_parent=PRODUCER_PARENT, trace_state=PRODUCER_STATE)
    (delivery_id,) = events.publish(make.pool, event).delivery_ids
    start_worker(min_backoff=0.1, max_backoff=0.2)

    received = receiver.wait_for(2)
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    sent = [{name: value for name, value in request.headers.items() if name not in NOT_KEPT}
            for request in received]
    shown = [a.request_headers for a in inspection.attempts(make.pool, PLATFORM, delivery_id,
                                                            last=100)]
    assert shown == sent
    assert [h["webhook-attempt"] for h in shown] == ["1", "2"]
    assert len(shown[1]["webhook-signature"].split(" ")) == 2
    assert shown[1]["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
    assert shown[1]["tracestate"] == PRODUCER_STATE
    assert set(shown[0]) == {"webhook-id", "webhook-timestamp", "webhook-signature",
                             "webhook-attempt", "webhook-replay-generation", "traceparent",
                             "tracestate"}
    # Stored: only what no column holds; the webhook id, attempt and generation come back
    # from the rows.
    stored = [attempt["request_headers"] for attempt in make.attempts(delivery_id)]
    assert [set(h) for h in stored] == [{"webhook-timestamp", "webhook-signature",
                                         "traceparent", "tracestate"}] * 2
    assert stored == [{name: sent_headers[name] for name in kept}
                      for sent_headers, kept in zip(sent, stored, strict=True)]


def test_attempts_recorded_before_headers_were_kept_have_none(make):
    delivery_id = make.delivery(status="failed", next_attempt_at=None)
    with make.pool.transaction() as cursor:
        cursor.execute("INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number, "
                       "replay_generation, endpoint, outcome, status_code, duration_ms) "
                       "VALUES (1, %s, 1, 0, 'http://127.0.0.1:9/hook', 'http_error', 500, 3)",
                       (delivery_id,))
    (attempt,) = inspection.attempts(make.pool, PLATFORM, delivery_id, last=100)
    assert attempt.request_headers is None

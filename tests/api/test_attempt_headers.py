"""`Attempt.requestHeaders`: the headers each attempt sent, null for attempts recorded before."""

from __future__ import annotations

from db import deliveries
from db.deliveries import AttemptResult
from db.vocabulary import Status

ATTEMPTS = """
query ($id: ID!) {
  delivery(id: $id) { attempts { attemptNumber requestHeaders } }
}"""

KEPT = {  # what an attempt stores: the headers no column of its rows holds
    "webhook-timestamp": "1733100000",
    "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= "
                         "v1,qXIBXVF+gFYmRx3vHrL5wBc8KQ6gYUZrJ3G7yPfxE1w=",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "vendor=opaque",
}


def test_each_attempt_shows_the_headers_it_sent_and_older_ones_null(api, make):
    config = make.config()
    delivery_id = make.delivery(config)
    with make.pool.transaction() as cursor:  # recorded before headers were kept
        cursor.execute("INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number, "
                       "replay_generation, endpoint, outcome, status_code, duration_ms) "
                       "VALUES (1, %s, 1, 0, %s, 'http_error', 500, 3)",
                       (delivery_id, config.endpoint))
    make.set(delivery_id, attempt_count=1)
    (claimed,) = deliveries.claim_due(make.pool, owner="test", limit=1)
    deliveries.record_and_settle(make.pool, [AttemptResult(
        delivery_id=delivery_id, token=claimed.token, attempt_number=2, replay_generation=0,
        endpoint=config.endpoint, outcome="success", status_code=200, duration_ms=4,
        response_excerpt="ok", error=None, next_status=Status.SUCCEEDED, next_delay=None,
        last_error=None, request_headers=KEPT)])

    attempts = api.data(ATTEMPTS, {"id": str(delivery_id)})["delivery"]["attempts"]
    sent = {**KEPT, "webhook-id": claimed.webhook_id, "webhook-attempt": "2",
            "webhook-replay-generation": "0"}
    assert attempts == [{"attemptNumber": 1, "requestHeaders": None},
                        {"attemptNumber": 2, "requestHeaders": sent}]


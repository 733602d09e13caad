"""Through the API with a running worker: configure, publish, inspect, fail, replay, rotate."""

from __future__ import annotations

import re

from standardwebhooks.webhooks import Webhook

from tests.api.conftest import metric_value
from tests.helpers import wait_until
from tests.receivers import Reply

CREATE = """mutation ($input: CreateConfigInput!) {
  createConfig(input: $input) { secret config { id } } }"""
PUBLISH = """mutation ($input: PublishEventInput!) {
  publishEvent(input: $input) { eventId deliveryIds } }"""
DETAIL = """query ($id: ID!) { delivery(id: $id) {
  webhookId status attemptCount replayGeneration lastStatusCode nextAttemptAt payload
  attempts { attemptNumber replayGeneration outcome statusCode endpoint responseExcerpt } } }"""
REPLAY = """mutation ($id: ID!) { replayDelivery(id: $id) { action replayGeneration } }"""


def _create(api, url):
    return api.data(CREATE, {"input": {"endpoint": url, "eventTypes": ["order.created"]}})[
        "createConfig"]


def _status(api, delivery_id, status):
    def check():
        delivery = api.data(DETAIL, {"id": delivery_id})["delivery"]
        return delivery["status"] == status and delivery

    return wait_until(check)


def test_publish_deliver_fail_and_replay_through_the_api(
        api, receiver_factory, start_worker, telemetry):
    answers = iter([200, 500, 500, 200])
    receiver = receiver_factory(lambda request: Reply(next(answers)))
    created = _create(api, receiver.url)
    start_worker(max_attempts=2, min_backoff=0.2, max_backoff=0.2)

    published = api.data(PUBLISH, {"input": {"type": "order.created", "id": "evt_ok",
                                             "payload": {"order": 1}}})["publishEvent"]
    (delivered_id,) = published["deliveryIds"]
    delivered = _status(api, delivered_id, "SUCCEEDED")
    assert delivered["payload"] == {"order": 1}
    assert delivered["attempts"] == [{"attemptNumber": 1, "replayGeneration": 0,
                                      "outcome": "SUCCESS", "statusCode": 200,
                                      "endpoint": receiver.url, "responseExcerpt": "ok"}]
    request = receiver.wait_for(1)[0]
    assert Webhook(created["secret"]).verify(request.body, request.headers)["id"] == "evt_ok"

    failing = api.data(PUBLISH, {"input": {"type": "order.created", "payload": {"order": 2}}})
    (failed_id,) = failing["publishEvent"]["deliveryIds"]
    failed = _status(api, failed_id, "FAILED")
    assert (failed["attemptCount"], failed["lastStatusCode"]) == (2, 500)
    assert failed["nextAttemptAt"] is None
    assert api.code(REPLAY, {"id": delivered_id}, headers={"Idempotency-Key": "a"}) == \
        "NOT_ELIGIBLE"

    result = api.data(REPLAY, {"id": failed_id}, headers={"Idempotency-Key": "b"})
    assert result == {"replayDelivery": {"action": "REPLAYED", "replayGeneration": 1}}
    replayed = _status(api, failed_id, "SUCCEEDED")
    assert replayed["replayGeneration"] == 1 and replayed["attemptCount"] == 1
    assert [(a["replayGeneration"], a["attemptNumber"], a["statusCode"])
            for a in replayed["attempts"]] == [(0, 1, 500), (0, 2, 500), (1, 1, 200)]
    first_try, last = receiver.wait_for(4)[1], receiver.wait_for(4)[3]
    assert replayed["webhookId"].startswith("msg_")
    assert last.headers["webhook-id"] == first_try.headers["webhook-id"] == replayed["webhookId"]
    assert last.headers["webhook-replay-generation"] == "1"
    assert last.headers["webhook-attempt"] == "1"
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 1
    metrics = api.client.get("/metrics").get_data(as_text=True)
    assert re.search(r'^webhooks_replayed_deliveries_total\{action="replayed".*\} 1\.0$',
                     metrics, re.MULTILINE)


def test_expediting_a_retry_sends_it_at_once(api, receiver_factory, start_worker):
    answers = iter([503, 200])
    receiver = receiver_factory(lambda request: Reply(next(answers)))
    _create(api, receiver.url)
    # No poll and no backoff ends within the test's patience: only the NOTIFY wakes it.
    start_worker(min_backoff=3600.0, retry_period=3600.0)
    published = api.data(PUBLISH, {"input": {"type": "order.created", "payload": {}}})
    (delivery_id,) = published["publishEvent"]["deliveryIds"]
    waiting = wait_until(lambda: (d := api.data(DETAIL, {"id": delivery_id})["delivery"])[
        "attemptCount"] == 1 and d)
    assert waiting["status"] == "PENDING"
    result = api.data(REPLAY, {"id": delivery_id}, headers={"Idempotency-Key": "now"})
    assert result["replayDelivery"] == {"action": "EXPEDITED", "replayGeneration": 0}
    done = _status(api, delivery_id, "SUCCEEDED")
    assert done["attemptCount"] == 2
    assert receiver.wait_for(2)[1].headers["webhook-attempt"] == "2"


def test_a_rotated_secret_signs_alongside_the_old_one(api, receiver, start_worker):
    created = _create(api, receiver.url)
    old = created["secret"]
    rotated = api.data('mutation ($id: ID!) { rotateConfigSecret(id: $id) { secret } }',
                       {"id": created["config"]["id"]})["rotateConfigSecret"]["secret"]
    start_worker()
    api.data(PUBLISH, {"input": {"type": "order.created", "payload": {"k": "v"}}})
    (request,) = receiver.wait_for(1)
    assert len(request.headers["webhook-signature"].split()) == 2
    for secret in (old, rotated):
        assert Webhook(secret).verify(request.body, request.headers)["data"] == {"k": "v"}

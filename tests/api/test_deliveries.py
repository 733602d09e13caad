"""Inspecting deliveries: filters, cursor pagination and one delivery in detail."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from db import events
from db.scope import DEFAULT_TENANT_ID

LIST = """
query ($filter: DeliveryFilter, $first: Int, $after: String) {
  deliveries(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id webhookId eventId eventType configId status attemptCount
                          replayGeneration nextAttemptAt lastStatusCode lastError createdAt
                          updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}"""

DETAIL = """
query ($id: ID!) {
  delivery(id: $id) {
    id webhookId eventId eventType configId status attemptCount replayGeneration nextAttemptAt
    lastStatusCode lastError createdAt updatedAt payload occurredAt
    attempts { id attemptNumber replayGeneration endpoint outcome statusCode durationMs
               responseExcerpt error createdAt }
  }
}"""


def ids(data: dict) -> list[str]:
    return [edge["node"]["id"] for edge in data["deliveries"]["edges"]]


def test_deliveries_are_listed_newest_first_without_payloads(api, make):
    config = make.config()
    created = [make.delivery(config) for _ in range(3)]
    data = api.data(LIST)
    assert ids(data) == [str(i) for i in reversed(created)]
    node = data["deliveries"]["edges"][0]["node"]
    assert node["status"] == "PENDING"
    assert node["configId"] == config.id
    assert node["eventType"] == "order.created"
    assert node["attemptCount"] == 0 and node["replayGeneration"] == 0
    assert datetime.fromisoformat(node["createdAt"]).tzinfo is not None
    assert data["deliveries"]["pageInfo"]["hasNextPage"] is False
    assert api.code("{ deliveries { edges { node { payload } } } }") == "BAD_USER_INPUT"


def test_pages_follow_the_cursor_to_the_end_without_gaps_or_repeats(api, make):
    config = make.config()
    created = [str(make.delivery(config)) for _ in range(7)]
    seen, after, pages = [], None, 0
    while True:
        page = api.data(LIST, {"first": 3, "after": after})["deliveries"]
        seen += [edge["node"]["id"] for edge in page["edges"]]
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    assert pages == 3
    assert seen == list(reversed(created))


def test_deliveries_are_listed_by_creation_time_even_when_ids_disagree(api, make):
    config = make.config()
    newest, oldest, middle = (make.delivery(config) for _ in range(3))
    now = datetime.now(UTC)
    # Upgrades and backfills insert old history after new rows: ids do not follow time.
    make.set(oldest, created_at=now - timedelta(days=3))
    make.set(middle, created_at=now - timedelta(days=2))
    make.set(newest, created_at=now - timedelta(days=1))
    seen, after = [], None
    while True:
        page = api.data(LIST, {"first": 1, "after": after})["deliveries"]
        seen += [edge["node"]["id"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [str(newest), str(middle), str(oldest)]
    window = {"createdAfter": (now - timedelta(days=2, hours=1)).isoformat(),
              "createdBefore": (now - timedelta(hours=1)).isoformat()}
    assert ids(api.data(LIST, {"filter": window})) == [str(newest), str(middle)]


def test_rows_created_in_the_same_instant_page_by_id(api, make):
    config = make.config()
    created = [make.delivery(config) for _ in range(5)]
    instant = datetime.now(UTC) - timedelta(minutes=1)
    for delivery_id in created:
        make.set(delivery_id, created_at=instant)
    seen, after = [], None
    while True:
        page = api.data(LIST, {"first": 2, "after": after})["deliveries"]
        seen += [edge["node"]["id"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [str(i) for i in reversed(created)]


def test_an_empty_page_has_no_end_cursor(api):
    page = api.data(LIST)["deliveries"]
    assert page == {"edges": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}


def test_filters_by_config_status_event_type_and_event_id(api, make):
    first, second = make.config(), make.config(event_types=["invoice.paid"])
    a = make.delivery(first)
    b = make.delivery(first, status="failed", next_attempt_at=None)
    c = make.delivery(second)
    event_id = make.row(c)["event_id"]
    assert ids(api.data(LIST, {"filter": {"configId": first.id}})) == [str(b), str(a)]
    assert ids(api.data(LIST, {"filter": {"status": ["FAILED"]}})) == [str(b)]
    assert ids(api.data(LIST, {"filter": {"status": ["FAILED", "PENDING"]}})) == \
        [str(c), str(b), str(a)]
    assert ids(api.data(LIST, {"filter": {"status": []}})) == [str(c), str(b), str(a)]
    assert ids(api.data(LIST, {"filter": {"eventType": "invoice.paid"}})) == [str(c)]
    assert ids(api.data(LIST, {"filter": {"eventId": event_id}})) == [str(c)]
    assert ids(api.data(LIST, {"filter": {"configId": first.id, "status": ["PENDING"]}})) == \
        [str(a)]
    assert ids(api.data(LIST, {"filter": {"configId": "no-such-config"}})) == []


def test_filters_by_creation_window(api, make):
    config = make.config()
    old, new = make.delivery(config), make.delivery(config)
    now = datetime.now(UTC)
    make.set(old, created_at=now - timedelta(days=2))
    day_ago = (now - timedelta(days=1)).isoformat()
    assert ids(api.data(LIST, {"filter": {"createdAfter": day_ago}})) == [str(new)]
    assert ids(api.data(LIST, {"filter": {"createdBefore": day_ago}})) == [str(old)]
    window = {"createdAfter": (now - timedelta(days=3)).isoformat().replace("+00:00", "Z"),
              "createdBefore": day_ago}
    assert ids(api.data(LIST, {"filter": window})) == [str(old)]


@pytest.mark.parametrize("first", [0, -1, 1001, 2**31 - 1])
def test_first_out_of_range_is_bad_input(shared_api, first):
    error = shared_api.error(LIST, {"first": first})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "1000" in error["message"]


def test_first_beyond_a_graphql_int_is_bad_input(shared_api):
    assert shared_api.code(LIST, {"first": 2**40}) == "BAD_USER_INPUT"
    query = "{ deliveries(first: 99999999999999) { pageInfo { hasNextPage } } }"
    assert shared_api.code(query) == "BAD_USER_INPUT"


def test_first_may_be_1000_and_null_means_the_default(api, make):
    make.delivery()
    assert len(ids(api.data(LIST, {"first": 1000}))) == 1
    assert len(ids(api.data(LIST, {"first": None}))) == 1


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize("cursor", [
    "garbage", "", "%%%", "====", _b64("not json"), _b64("[1,2]"), _b64('{"id": 5}'),
    _b64('{"l": "deliveries", "id": "5"}'), _b64('{"l": "deliveries", "id": -5}'),
    _b64('{"l": "deliveries", "id": 99999999999999999999999}'),
    _b64('{"l": "deliveries", "id": 1.5}'), _b64('{"l": "deliveries", "id": true}'),
    _b64('{"l": "configs", "id": 5}'), "x" * 5000, "\u00e9\u00e9\u00e9",
    _b64('{"l": "deliveries", "id": 5'), base64.b64encode(b"\xff\xfe\x00").decode(),
])
def test_a_tampered_cursor_is_bad_input(shared_api, cursor):
    error = shared_api.error(LIST, {"after": cursor})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "cursor" in error["message"]


def test_a_cursor_of_another_listing_is_refused(api, make):
    make.config()
    make.config()
    cursor = api.data("{ configs(first: 1) { pageInfo { endCursor } } }")
    after = cursor["configs"]["pageInfo"]["endCursor"]
    assert api.code(LIST, {"after": after}) == "BAD_USER_INPUT"


@pytest.mark.parametrize("moment", [
    "yesterday", "2024-13-01T00:00:00Z", "2024-05-01T12:00:00", "", "2024-05-01T25:00:00Z", 5,
])
def test_a_bad_date_is_bad_input(shared_api, moment):
    error = shared_api.error(LIST, {"filter": {"createdAfter": moment}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_bad_date_literal_is_bad_input(shared_api):
    query = '{ deliveries(filter: {createdBefore: "soon"}) { pageInfo { hasNextPage } } }'
    assert shared_api.code(query) == "BAD_USER_INPUT"


def test_an_unknown_status_is_bad_input(shared_api):
    assert shared_api.code(LIST, {"filter": {"status": ["LOST"]}}) == "BAD_USER_INPUT"


@pytest.mark.parametrize("field", ["configId", "eventType", "eventId"])
def test_text_filters_with_nul_characters_are_bad_input(shared_api, field):
    assert shared_api.code(LIST, {"filter": {field: "a\x00b"}}) == "BAD_USER_INPUT"


def test_a_delivery_shows_its_payload_and_attempts_oldest_first(api, make):
    config = make.config()
    _, (delivery_id,) = make.event(payload={"order": 7, "items": ["a", None], "ok": True})
    with make.pool.transaction() as cursor:
        for number, (outcome, code) in enumerate([("http_error", 500), ("success", 200)], 1):
            cursor.execute(
                "INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number,"
                " replay_generation,"
                " endpoint, outcome, status_code, duration_ms, response_excerpt, error)"
                " VALUES (1, %s, %s, 0, %s, %s, %s, 12, 'body', NULL)",
                (delivery_id, number, config.endpoint, outcome, code),
            )
    make.set(delivery_id, status="succeeded", attempt_count=2, last_status_code=200,
             next_attempt_at=None)
    delivery = api.data(DETAIL, {"id": str(delivery_id)})["delivery"]
    assert delivery["payload"] == {"order": 7, "items": ["a", None], "ok": True}
    assert delivery["status"] == "SUCCEEDED"
    assert delivery["attemptCount"] == 2 and delivery["lastStatusCode"] == 200
    assert [a["statusCode"] for a in delivery["attempts"]] == [500, 200]
    assert [a["attemptNumber"] for a in delivery["attempts"]] == [1, 2]
    assert delivery["attempts"][0] | {"id": None, "createdAt": None} == {
        "id": None, "attemptNumber": 1, "replayGeneration": 0, "endpoint": config.endpoint,
        "outcome": "HTTP_ERROR", "statusCode": 500, "durationMs": 12,
        "responseExcerpt": "body", "error": None, "createdAt": None,
    }


@pytest.mark.parametrize("payload", [None, [1, 2], "text", 3.5, {"deep": {"er": [{}]}}])
def test_any_json_payload_comes_back_as_it_was(api, make, payload):
    make.config()
    _, (delivery_id,) = make.event(payload={"wrapped": payload})
    assert api.data(DETAIL, {"id": delivery_id})["delivery"]["payload"] == {"wrapped": payload}


def test_an_unknown_delivery_is_not_found(shared_api):
    error = shared_api.error(DETAIL, {"id": "999999"})
    assert error["extensions"]["code"] == "NOT_FOUND"
    assert error["message"] == "delivery 999999 not found"
    assert error["path"] == ["delivery"]


@pytest.mark.parametrize("id", ["abc", "-1", "0", "1.5", "99999999999999999999999",
                                "", " ", "\x00", "1e3", "\u0661"])
def test_an_id_that_cannot_name_a_delivery_is_bad_input(shared_api, id):
    error = shared_api.error(DETAIL, {"id": id})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "is not a delivery id" in error["message"] or "is out of range" in error["message"]


def test_an_integer_id_works_too(api, make):
    delivery_id = make.delivery()
    assert api.data(DETAIL, {"id": delivery_id})["delivery"]["id"] == str(delivery_id)


def test_the_payload_of_a_large_event_is_kept_exact(api, make):
    make.config()
    payload = {"blob": "x" * 500_000, "n": 2**60, "unicode": "\u00e9\u2603"}
    _, (delivery_id,) = make.event(payload=payload)
    text = api.post(DETAIL, {"id": delivery_id}).get_data(as_text=True)
    assert json.loads(text)["data"]["delivery"]["payload"] == payload


def test_each_delivery_shows_the_webhook_id_its_requests_carry(api, make):
    config = make.config()
    first, second = make.delivery(config), make.delivery(config)
    listed = {edge["node"]["id"]: edge["node"]["webhookId"]
              for edge in api.data(LIST)["deliveries"]["edges"]}
    stored = {str(id): make.row(id)["webhook_id"] for id in (first, second)}
    assert listed == stored
    assert all(value.startswith("msg_") for value in listed.values())
    assert len(set(listed.values())) == 2
    detail = api.data(DETAIL, {"id": str(first)})["delivery"]
    assert detail["webhookId"] == stored[str(first)]


def test_a_delivery_made_before_webhook_ids_shows_its_number(api, make):
    delivery_id = make.delivery()
    make.set(delivery_id, webhook_id=None)  # as stored before the upgrade
    detail = api.data(DETAIL, {"id": str(delivery_id)})["delivery"]
    assert detail["webhookId"] == str(delivery_id)


BROKER_FIELDS = """
query ($id: ID!) { delivery(id: $id) { eventKey traceparent tracestate } }"""


def test_a_delivery_shows_the_key_and_trace_context_its_broker_message_carried(api, make):
    make.config()
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    event = events.new_event("from-kafka", "order.created", {}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1024)
    (keyed,) = events.publish(make.pool, replace(event, key=b"\x00customer-42",
                                                 trace_parent=trace, trace_state="a=b")
                              ).delivery_ids
    _, (plain,) = make.event(type="order.created")
    assert api.data(BROKER_FIELDS, {"id": str(keyed)})["delivery"] == {
        "eventKey": base64.b64encode(b"\x00customer-42").decode(), "traceparent": trace,
        "tracestate": "a=b"}
    assert api.data(BROKER_FIELDS, {"id": str(plain)})["delivery"] == {
        "eventKey": None, "traceparent": None, "tracestate": None}

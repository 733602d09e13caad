"""publishEvent: fan-out, idempotency on the event id, payload limits."""

from __future__ import annotations

import hashlib

import pytest

from db.event_keys import ordering_key

PUBLISH = """mutation ($input: PublishEventInput!) {
  publishEvent(input: $input) { eventId deliveryIds duplicate } }"""


def publish(api, **input):
    return api.data(PUBLISH, {"input": {"type": "order.created", "payload": {}, **input}})[
        "publishEvent"]


def test_an_event_fans_out_to_each_active_subscribed_config(api, make):
    subscribed = [make.config(), make.config(event_types=["order.created", "x"])]
    make.config(event_types=["other"])
    inactive = make.config(active=False)
    result = publish(api, payload={"order": 1}, id="evt_1")
    assert result["eventId"] == "evt_1"
    rows = [make.row(int(i)) for i in result["deliveryIds"]]
    assert sorted(row["config_id"] for row in rows) == sorted(c.id for c in subscribed)
    assert inactive.id not in {row["config_id"] for row in rows}
    assert {row["status"] for row in rows} == {"pending"}


def test_an_id_is_generated_when_none_is_given(api, make):
    make.config()
    one, two = publish(api), publish(api)
    assert one["eventId"].startswith("evt_") and one["eventId"] != two["eventId"]
    assert len(one["deliveryIds"]) == 1


def test_publishing_the_same_id_again_returns_the_same_deliveries(api, make):
    make.config()
    first = publish(api, id="evt_same", payload={"v": 1})
    again = publish(api, id="evt_same", payload={"v": 2})
    assert first["duplicate"] is False
    assert again == {**first, "duplicate": True}
    assert make.count("SELECT count(*) FROM deliveries") == 1
    assert make.count("SELECT count(*) FROM events WHERE payload::jsonb = '{\"v\": 1}'") == 1


def test_an_event_nobody_subscribes_to_has_no_deliveries(api):
    assert publish(api, type="nobody.cares", id="evt_lonely") == {
        "eventId": "evt_lonely", "deliveryIds": [], "duplicate": False}
    assert publish(api, type="nobody.cares", id="evt_lonely")["duplicate"] is True


def test_a_payload_over_the_limit_is_bad_input(client, settings, pool, operator_token, make):
    from service.web.app import create_app
    from tests.api.conftest import Api

    make.config()
    small = Api(create_app(settings.replace(max_payload=100), pool=pool).test_client(),
                operator_token)
    error = small.error(PUBLISH, {"input": {"type": "order.created",
                                            "payload": {"x": "y" * 200}}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "100 bytes" in error["message"]
    assert make.count("SELECT count(*) FROM events") == 0
    assert small.data(PUBLISH, {"input": {"type": "order.created", "payload": {"x": 1}}})


def test_a_request_body_far_over_the_limit_is_refused_without_a_500(settings, pool,
                                                                    operator_token):
    from service.web.app import create_app
    from tests.api.conftest import Api

    small = Api(create_app(settings.replace(max_payload=1000), pool=pool).test_client(),
                operator_token)
    response = small.post(PUBLISH, {"input": {"type": "t", "payload": "x" * 200_000}})
    assert response.status_code == 413
    assert response.get_json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


@pytest.mark.parametrize(("input", "word"), [
    ({"type": ""}, "type"),
    ({"type": "x" * 256}, "type"),
    ({"type": "a\x00b"}, "NUL"),
    ({"id": "x" * 256}, "id"),
    ({"id": "e\x00"}, "NUL"),
])
def test_invalid_events_are_bad_input(shared_api, input, word):
    error = shared_api.error(PUBLISH, {"input": {"type": "t", "payload": {}, **input}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert word in error["message"]


def test_an_empty_id_means_generate_one(api, make):
    make.config()
    assert publish(api, id="")["eventId"].startswith("evt_")


def test_a_payload_is_required_and_any_json_value_is_accepted(api, make):
    make.config()
    assert api.code(PUBLISH, {"input": {"type": "t"}}) == "BAD_USER_INPUT"
    for payload in ([1, "two"], "text", 0, False, {"nested": {"deep": [None]}}):
        result = publish(api, payload=payload)
        delivery = api.data("query ($id: ID!) { delivery(id: $id) { payload } }",
                            {"id": result["deliveryIds"][0]})
        assert delivery == {"delivery": {"payload": payload}}


def test_non_json_numbers_are_bad_input(api, client, operator_token, make):
    make.config()
    body = ('{"query": "mutation ($p: JSON!) { publishEvent(input: {type: \\"order.created\\", '
            'payload: $p}) { eventId } }", "variables": {"p": {"x": NaN}}}')
    response = client.post("/graphql", data=body, content_type="application/json",
                           headers={"Authorization": f"Bearer {operator_token}"})
    assert response.status_code in (200, 400)
    assert response.get_json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert make.count("SELECT count(*) FROM events") == 0


def test_a_payload_may_be_written_inline(api, make):
    make.config()
    result = api.data('mutation { publishEvent(input: {type: "order.created", id: "inline", '
                      'payload: {a: [1, 2.5, "x", true, null], b: {c: "d"}}}) { eventId } }')
    assert result == {"publishEvent": {"eventId": "inline"}}
    delivery = api.data('{ deliveries { edges { node { id } } } }')
    detail = api.data("query ($id: ID!) { delivery(id: $id) { payload } }",
                      {"id": delivery["deliveries"]["edges"][0]["node"]["id"]})
    assert detail["delivery"]["payload"] == {"a": [1, 2.5, "x", True, None], "b": {"c": "d"}}


ORDERED = """
query ($key: String) {
  deliveries(filter: {orderingKey: $key}) { totalCount edges { node { id orderingKey } } }
}"""


def test_an_ordering_key_goes_to_every_delivery_and_filters_them(api, make):
    make.config()
    make.config(event_types=["order.created", "order.paid"])
    first = publish(api, id="evt_a", orderingKey="order-1042 ✓")
    publish(api, id="evt_b", orderingKey="order-7")
    unkeyed = publish(api, id="evt_c", orderingKey="")  # empty: no key
    listed = api.data(ORDERED, {"key": "order-1042 ✓"})["deliveries"]
    assert listed["totalCount"] == 2
    assert sorted(e["node"]["id"] for e in listed["edges"]) == sorted(first["deliveryIds"])
    assert {e["node"]["orderingKey"] for e in listed["edges"]} == {"order-1042 ✓"}
    one = api.data(f'{{ delivery(id: "{unkeyed["deliveryIds"][0]}") {{ orderingKey }} }}')
    assert one["delivery"]["orderingKey"] is None
    assert api.data(ORDERED, {"key": "order-"})["deliveries"]["totalCount"] == 0  # exact


@pytest.mark.parametrize(("key", "stored"), [
    ("k" * 256, "~sha256:" + hashlib.sha256(b"k" * 256).hexdigest()),
    ("a\u0000b", "~b64:YQBi"),
    ("~b64:AP8=", "~b64:fmI2NDpBUDg9"),  # text that looks encoded is encoded itself
])
def test_an_ordering_key_that_cannot_be_kept_as_it_is_is_encoded_as_a_kafka_key_is(
        api, make, key, stored):
    make.config()
    (delivery_id,) = publish(api, orderingKey=key)["deliveryIds"]
    shown = api.data(f'{{ delivery(id: "{delivery_id}") {{ orderingKey }} }}')
    assert shown["delivery"]["orderingKey"] == stored == ordering_key(key.encode())
    assert api.data(ORDERED, {"key": stored})["deliveries"]["totalCount"] == 1


def test_an_ordering_key_that_is_not_unicode_text_is_refused(api, make):
    make.config()
    error = api.error(PUBLISH, {"input": {"type": "order.created", "payload": {},
                                          "orderingKey": "order-\ud800"}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "orderingKey: must be valid Unicode" in error["message"]

"""Config filters through the API: given, changed and cleared with a config, refused with
BAD_USER_INPUT naming the place in the filter, counted per config and in the metrics, and
tested against a payload by `testFilter`."""

from __future__ import annotations

import json

from tests.api.conftest import metric_value

CREATE = """
mutation ($input: CreateConfigInput!) {
  createConfig(input: $input) { config { id filter filterStats { filteredOut } } }
}"""
CREATE_MANY = """
mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: $inputs) { config { id } } }
"""
UPDATE = """
mutation ($id: ID!, $input: UpdateConfigInput!) { updateConfig(id: $id, input: $input) { filter } }
"""
PUBLISH = """
mutation ($payload: JSON!) {
  publishEvent(input: {type: "order.created", payload: $payload}) { deliveryIds }
}"""
STATS = """
query ($id: ID!) { config(id: $id) { filterStats { filteredOut lastFilteredOutAt } } }"""
TEST = """
query ($filter: JSON!, $payload: JSON!) { testFilter(filter: $filter, payload: $payload) {
  matched reason } }"""
# Fields in an order jsonb would not keep: the filter comes back as it was given.
FILTER = {"status": "paid", "amount": {"$gte": 100, "$lt": 1000}}


def _input(**fields):
    return {"endpoint": "https://example.com/hook", "eventTypes": ["order.created"], **fields}


def _in_order(api, query: str, variables: dict) -> dict:
    """Post with the variables' fields in their order (Flask's test client sorts them)."""
    response = api.client.post("/graphql", data=json.dumps({"query": query,
                                                            "variables": variables}),
                               content_type="application/json",
                               headers={"Authorization": f"Bearer {api.token}"})
    body = response.get_json()
    assert "errors" not in body, body
    return body["data"]


def test_a_filter_is_kept_as_given_and_decides_what_is_delivered(api, telemetry):
    config = _in_order(api, CREATE, {"input": _input(filter=FILTER)})["createConfig"]["config"]
    assert list(config["filter"]) == ["status", "amount"]
    assert list(config["filter"]["amount"]) == ["$gte", "$lt"]
    assert config["filterStats"] == {"filteredOut": 0}
    paid = api.data(PUBLISH, {"payload": {"status": "paid", "amount": 120}})
    assert len(paid["publishEvent"]["deliveryIds"]) == 1
    small = api.data(PUBLISH, {"payload": {"status": "paid", "amount": 12}})
    assert small["publishEvent"]["deliveryIds"] == []
    stats = api.data(STATS, {"id": config["id"]})["config"]["filterStats"]
    assert stats["filteredOut"] == 1 and stats["lastFilteredOutAt"]
    assert metric_value(telemetry, "webhooks_events_filtered_out_total") == 1


def test_update_changes_keeps_or_clears_the_filter(api):
    config = api.data(CREATE, {"input": _input()})["createConfig"]["config"]
    assert config["filter"] is None
    changed = api.data(UPDATE, {"id": config["id"], "input": {"filter": {"amount": 1}}})
    assert changed["updateConfig"]["filter"] == {"amount": 1}
    kept = api.data(UPDATE, {"id": config["id"], "input": {"name": "renamed"}})
    assert kept["updateConfig"]["filter"] == {"amount": 1}
    cleared = api.data(UPDATE, {"id": config["id"], "input": {"filter": None}})
    assert cleared["updateConfig"]["filter"] is None


def test_a_wrong_filter_is_bad_user_input_naming_the_place(api):
    error = api.error(CREATE, {"input": _input(filter={"$or": [{"a": 1},
                                                               {"b": {"$gtt": 2}}]})})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith("filter.$or[1].b.$gtt: unknown operator $gtt")
    error = api.error(CREATE_MANY, {"inputs": [_input(), _input(filter={"a": {"$regex": "("}})]})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith("config 2: filter.a.$regex: not a valid regular "
                                       "expression")
    config = api.data(CREATE, {"input": _input(filter={"a": 1})})["createConfig"]["config"]
    error = api.error(UPDATE, {"id": config["id"], "input": {"filter": [1]}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"] == "filter: a filter is a JSON object of fields and $and/$or"
    assert api.data(STATS, {"id": config["id"]})  # unchanged, still there
    assert api.data(UPDATE, {"id": config["id"], "input": {}})["updateConfig"]["filter"] == \
        {"a": 1}


def test_test_filter_says_whether_and_why(api, viewer):
    payload = {"amount": 50, "tags": ["eu", "vip"]}
    assert viewer.data(TEST, {"filter": {"amount": {"$gt": 100}}, "payload": payload}) == {
        "testFilter": {"matched": False, "reason": 'amount is 50, which fails {"$gt": 100}'}}
    assert api.data(TEST, {"filter": {"tags": "vip"}, "payload": payload})["testFilter"] == {
        "matched": True, "reason": 'tags is ["eu","vip"], which satisfies {"$eq": "vip"}'}
    error = api.error(TEST, {"filter": {"amount": {"$in": 3}}, "payload": payload})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"] == "filter.amount.$in: $in takes an array of values, not a number"

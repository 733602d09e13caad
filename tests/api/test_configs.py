"""Configs through the API: list, create, update, (de)activate, delete, rotate."""

from __future__ import annotations

import pytest

from db.scope import PLATFORM
from tests.api.conftest import metric_value

CONFIG_FIELDS = "id name endpoint eventTypes active createdAt updatedAt"
CREATE = f"""
mutation ($input: CreateConfigInput!) {{
  createConfig(input: $input) {{ secret config {{ {CONFIG_FIELDS} }} }}
}}"""
LIST = f"""
query ($active: Boolean, $first: Int, $after: String) {{
  configs(active: $active, first: $first, after: $after) {{
    edges {{ cursor node {{ {CONFIG_FIELDS} }} }} pageInfo {{ hasNextPage endCursor }}
  }}
}}"""
ONE = f"query ($id: ID!) {{ config(id: $id) {{ {CONFIG_FIELDS} }} }}"


def create(api, **input):
    input = {"endpoint": "https://example.com/hook", "eventTypes": ["order.created"], **input}
    return api.data(CREATE, {"input": input})["createConfig"]


def test_create_returns_the_config_and_its_secret_once(api, pool):
    created = create(api, name="billing", eventTypes=["a", "b", "a"])
    config = created["config"]
    assert created["secret"].startswith("whsec_")
    assert config["name"] == "billing" and config["active"] is True
    assert config["eventTypes"] == ["a", "b"]
    assert api.data(ONE, {"id": config["id"]})["config"] == config
    assert "secret" not in api.post(ONE, {"id": config["id"]}).get_data(as_text=True)
    assert api.code(f'{{ config(id: "{config["id"]}") {{ secret }} }}') == "BAD_USER_INPUT"


def test_create_keeps_a_given_secret_and_may_start_inactive(api):
    secret = "whsec_" + "A" * 32
    created = create(api, secret=secret, active=False)
    assert created["secret"] == secret
    assert created["config"]["active"] is False


@pytest.mark.parametrize(("input", "word"), [
    ({"endpoint": "ftp://example.com"}, "endpoint"),
    ({"endpoint": "not a url"}, "endpoint"),
    ({"endpoint": "http://"}, "endpoint"),
    ({"endpoint": "https://user:pw@example.com"}, "endpoint"),
    ({"endpoint": "https://example.com:99999/"}, "endpoint"),
    ({"endpoint": "https://exa\x00mple.com"}, "endpoint"),
    ({"endpoint": "https://example.com/" + "x" * 5000}, "endpoint"),
    ({"eventTypes": []}, "eventTypes"),
    ({"eventTypes": [""]}, "eventTypes"),
    ({"eventTypes": ["a\x00"]}, "eventTypes"),
    ({"eventTypes": ["x" * 300]}, "eventTypes"),
    ({"secret": "not-base64!"}, "secret"),
    ({"secret": "whsec_c2hvcnQ="}, "secret"),
    ({"name": "a\x00"}, "name"),
])
def test_invalid_config_input_is_bad_input_with_a_clear_message(shared_api, input, word):
    error = shared_api.error(CREATE, {"input": {"endpoint": "https://example.com/hook",
                                         "eventTypes": ["a"], **input}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert word in error["message"]
    assert shared_api.data("{ configs { edges { cursor } } }")["configs"]["edges"] == []


def test_missing_required_input_is_bad_input(shared_api):
    for input in ({"endpoint": "https://example.com"}, None,
                  {"endpoint": 5, "eventTypes": ["a"]}):
        assert shared_api.code(CREATE, {"input": input}) == "BAD_USER_INPUT"


CREATE_MANY = f"""
mutation ($inputs: [CreateConfigInput!]!) {{
  createConfigs(inputs: $inputs) {{ secret config {{ {CONFIG_FIELDS} maxInFlight }} }}
}}"""


def test_create_many_returns_each_config_with_its_own_secret_in_the_order_given(api):
    inputs = [{"endpoint": f"https://example.com/{n}", "eventTypes": ["a"], "name": f"m{n}"}
              for n in range(3)]
    inputs[1].update(secret="whsec_" + "B" * 32, maxInFlight=7, active=False)
    created = api.data(CREATE_MANY, {"inputs": inputs})["createConfigs"]
    assert [c["config"]["name"] for c in created] == ["m0", "m1", "m2"]
    assert created[1]["secret"] == inputs[1]["secret"]
    assert created[1]["config"]["maxInFlight"] == 7 and created[1]["config"]["active"] is False
    assert len({c["secret"] for c in created}) == 3
    for each in created:
        assert api.data(ONE, {"id": each["config"]["id"]})["config"] == {
            key: value for key, value in each["config"].items() if key != "maxInFlight"}


@pytest.mark.parametrize(("bad", "word"), [
    ({"endpoint": "ftp://example.com"}, "config 2: endpoint"),
    ({"eventTypes": [""]}, "config 2: eventTypes"),
    ({"name": "a\x00"}, "config 2: name"),
    ({"maxInFlight": 0}, "config 2: maxInFlight"),
])
def test_create_many_creates_none_when_one_input_is_invalid_and_names_it(shared_api, bad,
                                                                          word):
    inputs = [{"endpoint": "https://example.com/hook", "eventTypes": ["a"]} for _ in range(3)]
    inputs[1].update(bad)
    error = shared_api.error(CREATE_MANY, {"inputs": inputs})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith(word)
    assert shared_api.data("{ configs { edges { cursor } } }")["configs"]["edges"] == []


def test_configs_created_by_the_thousand_are_known_to_the_planner_at_once(api, pool):
    """Without statistics the planner takes the new configs for absent and finds an event's
    subscribers by reading every config; the batch leaves them analysed."""
    inputs = [{"endpoint": "https://example.com/hook", "eventTypes": [f"t{n}"]}
              for n in range(1000)]
    api.data(CREATE_MANY, {"inputs": inputs})
    (known,) = pool.execute("configs_rows_analysed")[0]
    assert known >= 1000
    with pool.transaction() as cursor:
        cursor.execute("EXPLAIN SELECT id FROM configs WHERE active AND deleted_at IS NULL"
                       " AND event_types && ARRAY['t7']")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "configs_subscribed" in plan, plan


def test_create_many_takes_one_to_a_thousand_inputs(shared_api):
    one = {"endpoint": "https://example.com/hook", "eventTypes": ["a"]}
    for inputs in ([], [one] * 1001):
        error = shared_api.error(CREATE_MANY, {"inputs": inputs})
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert "1 to 1,000" in error["message"]
    assert len(shared_api.data(CREATE_MANY, {"inputs": [one] * 1000})["createConfigs"]) == 1000


def test_configs_page_newest_first_and_filter_by_active(api):
    made = [create(api, name=f"c{i}", active=i % 2 == 0)["config"]["id"] for i in range(5)]
    seen, after = [], None
    while True:
        page = api.data(LIST, {"first": 2, "after": after})["configs"]
        seen += [edge["node"]["id"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(made))
    active = api.data(LIST, {"active": True})["configs"]["edges"]
    assert [edge["node"]["id"] for edge in active] == [made[4], made[2], made[0]]
    inactive = api.data(LIST, {"active": False})["configs"]["edges"]
    assert [edge["node"]["id"] for edge in inactive] == [made[3], made[1]]


@pytest.mark.parametrize("cursor", ["nope", "eyJsIjoiY29uZmlncyJ9", "eyJpZCI6MX0"])
def test_a_bad_configs_cursor_is_bad_input(shared_api, cursor):
    assert shared_api.code(LIST, {"after": cursor}) == "BAD_USER_INPUT"


def test_configs_first_is_bounded(shared_api):
    assert shared_api.code(LIST, {"first": 1001}) == "BAD_USER_INPUT"
    assert shared_api.code(LIST, {"first": 0}) == "BAD_USER_INPUT"


def test_update_changes_only_the_given_fields(api):
    config = create(api, name="old")["config"]
    update = """mutation ($id: ID!, $input: UpdateConfigInput!) {
      updateConfig(id: $id, input: $input) { id name endpoint eventTypes } }"""
    updated = api.data(update, {"id": config["id"],
                                "input": {"endpoint": "https://new.example.com/h"}})
    assert updated["updateConfig"] == {"id": config["id"], "name": "old",
                                       "endpoint": "https://new.example.com/h",
                                       "eventTypes": ["order.created"]}
    updated = api.data(update, {"id": config["id"], "input": {"eventTypes": ["x", "y"]}})
    assert updated["updateConfig"]["eventTypes"] == ["x", "y"]
    assert updated["updateConfig"]["name"] == "old"
    cleared = api.data(update, {"id": config["id"], "input": {"name": None}})
    assert cleared["updateConfig"]["name"] is None
    assert api.code(update, {"id": config["id"], "input": {"endpoint": "mailto:x"}}) == \
        "BAD_USER_INPUT"
    assert api.code(update, {"id": config["id"], "input": {"eventTypes": []}}) == \
        "BAD_USER_INPUT"


@pytest.mark.parametrize("mutation", [
    'updateConfig(id: $id, input: {name: "x"}) { id }',
    "activateConfig(id: $id) { id }",
    "deactivateConfig(id: $id) { cancelledDeliveries }",
    "deleteConfig(id: $id) { cancelledDeliveries }",
    "rotateConfigSecret(id: $id) { secret }",
])
@pytest.mark.parametrize("id", ["no-such-config", "", "a\x00b", "x" * 3000])
def test_an_unknown_config_is_not_found(shared_api, mutation, id):
    error = shared_api.error(f"mutation ($id: ID!) {{ {mutation} }}", {"id": id})
    assert error["extensions"]["code"] in ("NOT_FOUND", "BAD_USER_INPUT")
    if "\x00" not in id and len(id) < 3000:
        assert error["extensions"]["code"] == "NOT_FOUND"


def test_an_unknown_config_query_is_not_found(shared_api):
    error = shared_api.error(ONE, {"id": "nope"})
    assert (error["extensions"]["code"], error["message"]) == ("NOT_FOUND",
                                                              "config 'nope' not found")
    long = shared_api.error(ONE, {"id": "x" * 5000})["message"]
    assert len(long) < 80
    assert shared_api.code(ONE, {"id": "a\x00"}) == "BAD_USER_INPUT"


def test_deactivate_cancels_pending_deliveries_and_counts_the_transitions(api, make, telemetry):
    config = make.config()
    pending = [make.delivery(config) for _ in range(2)]
    failed = make.delivery(config, status="failed", next_attempt_at=None)
    result = api.data('mutation ($id: ID!) { deactivateConfig(id: $id) { cancelledDeliveries '
                      'config { active } } }', {"id": config.id})["deactivateConfig"]
    assert result == {"cancelledDeliveries": 2, "config": {"active": False}}
    assert {make.row(i)["status"] for i in pending} == {"cancelled"}
    assert make.row(failed)["status"] == "failed"
    assert metric_value(telemetry, "webhooks_delivery_transitions_total",
                        **{"from": "pending", "to": "cancelled"}) == 2
    activated = api.data('mutation ($id: ID!) { activateConfig(id: $id) { active } }',
                         {"id": config.id})
    assert activated == {"activateConfig": {"active": True}}
    assert {make.row(i)["status"] for i in pending} == {"cancelled"}


def test_a_deleted_config_disappears_but_its_deliveries_stay_inspectable(api, make):
    config = make.config()
    delivery_id = make.delivery(config)
    result = api.data('mutation ($id: ID!) { deleteConfig(id: $id) { cancelledDeliveries '
                      'config { id active } } }', {"id": config.id})["deleteConfig"]
    assert result == {"cancelledDeliveries": 1, "config": {"id": config.id, "active": False}}
    assert api.code(ONE, {"id": config.id}) == "NOT_FOUND"
    assert api.data(LIST)["configs"]["edges"] == []
    delivery = api.data('query ($id: ID!) { delivery(id: $id) { status configId } }',
                        {"id": delivery_id})
    assert delivery == {"delivery": {"status": "CANCELLED", "configId": config.id}}
    assert api.code('mutation ($id: ID!) { deleteConfig(id: $id) { cancelledDeliveries } }',
                    {"id": config.id}) == "NOT_FOUND"


def test_rotation_returns_a_new_secret_and_keeps_the_old_one_for_the_grace(api, make, pool):
    config = make.config()
    old = make.secrets[config.id]
    rotated = api.data('mutation ($id: ID!) { rotateConfigSecret(id: $id) { secret config '
                       '{ id } } }', {"id": config.id})["rotateConfigSecret"]
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != old
    with pool.transaction() as cursor:
        cursor.execute("SELECT secret, previous_secrets -> 0 ->> 'secret',"
                       " (previous_secrets -> 0 ->> 'expires_at')::timestamptz - now(),"
                       " jsonb_array_length(previous_secrets) FROM configs WHERE id = %s",
                       (config.id,))
        secret, previous, remaining, count = cursor.fetchone()
    assert (secret, previous, count) == (rotated["secret"], old, 1)
    assert 23.9 * 3600 < remaining.total_seconds() <= 24 * 3600


def test_rotation_to_a_given_secret_and_a_bad_one(api, make):
    config = make.config()
    given = "whsec_" + "B" * 40
    rotated = api.data('mutation ($id: ID!, $s: String) { rotateConfigSecret(id: $id, '
                       'secret: $s) { secret } }', {"id": config.id, "s": given})
    assert rotated == {"rotateConfigSecret": {"secret": given}}
    assert api.code('mutation ($id: ID!) { rotateConfigSecret(id: $id, secret: "nope") '
                    '{ secret } }', {"id": config.id}) == "BAD_USER_INPUT"


FILTERED = f"""
query ($filter: ConfigFilter, $first: Int, $after: String, $last: Int, $before: String) {{
  configs(filter: $filter, first: $first, after: $after, last: $last, before: $before) {{
    totalCount
    edges {{ cursor node {{ {CONFIG_FIELDS} }} }}
    pageInfo {{ hasNextPage endCursor hasPreviousPage startCursor }}
  }}
}}"""


def test_configs_search_a_piece_of_the_name_or_endpoint_in_any_case_or_the_id(api):
    crm = create(api, name="Acme CRM sync", endpoint="https://crm.example.com/in")["config"]
    billing = create(api, name="billing", endpoint="https://pay.example.net/Hooks")["config"]
    literal = create(api, name="100%_done", endpoint="https://x.example.org/")["config"]

    def found(search):
        page = api.data(FILTERED, {"filter": {"search": search}})["configs"]
        assert page["totalCount"] == len(page["edges"])
        return {edge["node"]["id"] for edge in page["edges"]}

    assert found("crm") == {crm["id"]}
    assert found("ACME") == {crm["id"]}
    assert found("/hooks") == {billing["id"]}
    assert found("example") == {crm["id"], billing["id"], literal["id"]}
    assert found("%_") == {literal["id"]}  # wildcards are plain characters here
    assert found("%_do") == {literal["id"]}
    assert found("0_d") == set()  # "_" is not any character
    assert found("_") == {literal["id"]}
    assert found(billing["id"]) == {billing["id"]}
    assert found("nothing like it") == set()
    assert found("  ") == {crm["id"], billing["id"], literal["id"]}  # blank: no search


def test_configs_filter_by_health_and_active_with_a_total_count(api, make):
    from db import health
    paused = create(api, name="paused")["config"]
    create(api, name="fine")
    create(api, name="off", active=False)
    health.pause(make.pool, PLATFORM, paused["id"], reason="test")

    def listed(filter):
        page = api.data(FILTERED, {"filter": filter})["configs"]
        return page["totalCount"], [edge["node"]["name"] for edge in page["edges"]]

    assert listed({"health": "PAUSED"}) == (1, ["paused"])
    assert listed({"health": "HEALTHY"}) == (2, ["off", "fine"])
    assert listed({"health": "HEALTHY", "active": True}) == (1, ["fine"])
    assert listed({"active": False, "search": "of"}) == (1, ["off"])
    assert listed({"health": "OPEN"}) == (0, [])
    assert listed({}) == (3, ["off", "fine", "paused"])


def test_configs_page_forwards_and_backwards_with_the_filter(api):
    made = [create(api, name=f"page-{n}")["config"]["id"] for n in range(7)]
    create(api, name="other")
    newest_first = list(reversed(made))
    forwards, after = [], None
    while True:
        page = api.data(FILTERED, {"filter": {"search": "page-"}, "first": 3,
                                   "after": after})["configs"]
        assert page["totalCount"] == 7
        forwards.append([edge["node"]["id"] for edge in page["edges"]])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert forwards == [newest_first[0:3], newest_first[3:6], newest_first[6:7]]
    last = api.data(FILTERED, {"filter": {"search": "page-"}, "last": 3})["configs"]
    assert [edge["node"]["id"] for edge in last["edges"]] == newest_first[4:7]
    assert last["pageInfo"]["hasPreviousPage"] and not last["pageInfo"]["hasNextPage"]
    before = api.data(FILTERED, {"filter": {"search": "page-"}, "last": 3,
                                 "before": last["pageInfo"]["startCursor"]})["configs"]
    assert [edge["node"]["id"] for edge in before["edges"]] == newest_first[1:4]
    assert before["pageInfo"]["hasPreviousPage"] and before["pageInfo"]["hasNextPage"]


@pytest.mark.parametrize("variables", [
    {"filter": {"search": "x" * 201}},
    {"filter": {"search": "a\u0000b"}},
    {"filter": {"active": True}, "active": False},
    {"after": "eyJsIjoiY29uZmlncyJ9", "before": "eyJsIjoiY29uZmlncyJ9"},
    {"last": 0},
])
def test_a_bad_configs_filter_or_page_is_bad_input_with_its_reason(shared_api, variables):
    query = FILTERED if "active" not in variables else """
query ($filter: ConfigFilter, $active: Boolean) {
  configs(filter: $filter, active: $active) { totalCount }
}"""
    assert shared_api.code(query, variables) == "BAD_USER_INPUT"

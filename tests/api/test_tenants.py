"""Tenants through the API: created, listed, changed and deleted by platform tokens; configs
and events belong to one tenant; a tenant token reaches its own tenant only; tokens for a
tenant; broadcast to several tenants in one transaction."""

from __future__ import annotations

import pytest

from db import tenants, tokens
from db.scope import DEFAULT_TENANT_UID, PLATFORM
from tests.api.conftest import Api

CREATE_TENANT = """mutation ($input: CreateTenantInput!) {
  createTenant(input: $input) { id uid name metadata deletedAt
                                limits { maxConfigs eventsPerSecond deliveriesPerSecond } }
}"""
CREATE_CONFIG = """mutation ($input: CreateConfigInput!) {
  createConfig(input: $input) { config { id tenant { uid } } }
}"""
PUBLISH = """mutation ($input: PublishEventInput!) {
  publishEvent(input: $input) { eventId duplicate deliveryIds
                                tenants { tenant deliveryIds duplicate } }
}"""
TENANTS = """query ($filter: TenantFilterInput, $first: Int, $after: String, $last: Int,
                   $before: String) {
  tenants(filter: $filter, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { uid name stats { pending queueDepth attemptsLastHour } } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor } totalCount
  }
}"""
DELETE_TENANT = """mutation ($uid: String!) {
  deleteTenant(uid: $uid) { tenant { uid deletedAt } configsStopped deliveriesCancelled }
}"""
ME = "{ me { role tenantUid } }"


def tenant_api(client, pool, uid: str, *, role: str = "operator") -> Api:
    """A client holding a token of tenant `uid` (created if need be)."""
    tenant = tenants.get(pool, PLATFORM, uid) or tenants.create(pool, uid=uid)
    return Api(client, tokens.create(pool, name=f"{uid}-{role}", role=role,
                                     tenant_id=tenant.id)[1])


def config_input(tenant: str | None = None, event_type: str = "order.paid") -> dict:
    given = {"endpoint": "https://example.com/hook", "eventTypes": [event_type]}
    return given if tenant is None else {**given, "tenant": tenant}


def test_a_tenant_is_created_listed_changed_and_found_by_uid(api):
    created = api.data(CREATE_TENANT, {"input": {
        "uid": "cus_42", "name": "Acme", "metadata": {"plan": "pro"},
        "limits": {"maxConfigs": 3}}})["createTenant"]
    assert created | {"id": None} == {
        "id": None, "uid": "cus_42", "name": "Acme", "metadata": {"plan": "pro"},
        "deletedAt": None,
        "limits": {"maxConfigs": 3, "eventsPerSecond": None, "deliveriesPerSecond": None}}
    assert api.code(CREATE_TENANT, {"input": {"uid": "cus_42"}}) == "BAD_USER_INPUT"
    for bad in ("", "x" * 257, "line\nbreak", "tab\there"):
        assert api.code(CREATE_TENANT, {"input": {"uid": bad}}) == "BAD_USER_INPUT", bad
    named = api.data(CREATE_TENANT, {"input": {"uid": "ünïcode ✓"}})["createTenant"]
    assert named["name"] == "ünïcode ✓"  # named by its uid when no name is given

    listed = api.data(TENANTS, {"filter": {"nameContains": "acm"}})["tenants"]
    assert [edge["node"]["uid"] for edge in listed["edges"]] == ["cus_42"]
    assert listed["totalCount"] == 1
    everyone = api.data(TENANTS, {"first": 2})["tenants"]
    assert [e["node"]["uid"] for e in everyone["edges"]] == ["ünïcode ✓", "cus_42"]
    rest = api.data(TENANTS, {"first": 2, "after": everyone["pageInfo"]["endCursor"]})
    assert [e["node"]["uid"] for e in rest["tenants"]["edges"]] == [DEFAULT_TENANT_UID]
    back = api.data(TENANTS, {"last": 2, "before": rest["tenants"]["pageInfo"]["startCursor"]})
    assert [e["node"]["uid"] for e in back["tenants"]["edges"]] == ["ünïcode ✓", "cus_42"]

    updated = api.data("""mutation { updateTenant(uid: "cus_42", input: {name: "Acme Inc",
        limits: {maxConfigs: null}}) { name limits { maxConfigs } } }""")["updateTenant"]
    assert updated == {"name": "Acme Inc", "limits": {"maxConfigs": None}}
    found = api.data('{ tenant(uid: "cus_42") { uid name } }')["tenant"]
    assert found == {"uid": "cus_42", "name": "Acme Inc"}
    assert api.code('{ tenant(uid: "nobody") { uid } }') == "NOT_FOUND"


CREATE_TENANTS = """mutation ($inputs: [CreateTenantInput!]!) {
  createTenants(inputs: $inputs) { uid name metadata limits { maxConfigs eventsPerSecond } }
}"""


def test_tenants_are_created_at_once_in_order_all_or_none(api, make):
    created = api.data(CREATE_TENANTS, {"inputs": [
        {"uid": "cus_1", "name": "One", "metadata": {"plan": "pro"}},
        {"uid": "cus_2", "limits": {"maxConfigs": 2, "eventsPerSecond": 5.0}},
        {"uid": "cus_3"}]})["createTenants"]
    assert created == [
        {"uid": "cus_1", "name": "One", "metadata": {"plan": "pro"},
         "limits": {"maxConfigs": None, "eventsPerSecond": None}},
        {"uid": "cus_2", "name": "cus_2", "metadata": {},
         "limits": {"maxConfigs": 2, "eventsPerSecond": 5.0}},
        {"uid": "cus_3", "name": "cus_3", "metadata": {},
         "limits": {"maxConfigs": None, "eventsPerSecond": None}}]
    listed = api.data(TENANTS, {"first": 3})["tenants"]["edges"]
    assert [edge["node"]["uid"] for edge in listed] == ["cus_3", "cus_2", "cus_1"]  # newest first
    before = make.count("SELECT count(*) FROM tenants")

    taken = api.error(CREATE_TENANTS, {"inputs": [{"uid": "new_1"}, {"uid": "cus_2"}]})
    assert taken["extensions"]["code"] == "BAD_USER_INPUT"
    assert taken["message"] == "tenant 2: uid: a tenant 'cus_2' exists (a deleted tenant keeps " \
                               "its uid)"
    twice = api.error(CREATE_TENANTS, {"inputs": [{"uid": "x"}, {"uid": "y"}, {"uid": "x"}]})
    assert twice["message"] == "tenant 3: uid: 'x' is given twice (tenant 1 too)"
    bad = api.error(CREATE_TENANTS, {"inputs": [{"uid": "ok"}, {"uid": "line\nbreak"}]})
    assert bad["message"].startswith("tenant 2: uid: only printable characters")
    assert api.code(CREATE_TENANTS, {"inputs": [{"uid": "ok", "metadata": [1]}]}) \
        == "BAD_USER_INPUT"
    for count in (0, 1001):
        assert api.error(CREATE_TENANTS, {"inputs": [{"uid": f"t{n}"} for n in range(count)]}
                         )["message"] == f"inputs: give 1 to 1,000 tenants, not {count:,}"
    assert make.count("SELECT count(*) FROM tenants") == before  # none of them created
    assert len(api.data(CREATE_TENANTS, {"inputs": [{"uid": f"t{n}"} for n in range(1000)]}
                        )["createTenants"]) == 1000


def test_one_tenant_created_alone_says_its_uid_is_taken_without_a_number(api):
    api.data(CREATE_TENANT, {"input": {"uid": "cus_9"}})
    assert api.error(CREATE_TENANT, {"input": {"uid": "cus_9"}})["message"] == \
        "uid: a tenant 'cus_9' exists (a deleted tenant keeps its uid)"


def test_a_config_and_its_events_belong_to_one_tenant(api, make):
    api.data(CREATE_TENANT, {"input": {"uid": "a"}})
    api.data(CREATE_TENANT, {"input": {"uid": "b"}})
    in_a = api.data(CREATE_CONFIG, {"input": config_input("a")})["createConfig"]["config"]
    in_b = api.data(CREATE_CONFIG, {"input": config_input("b")})["createConfig"]["config"]
    in_default = api.data(CREATE_CONFIG, {"input": config_input()})["createConfig"]["config"]
    assert [c["tenant"]["uid"] for c in (in_a, in_b, in_default)] == ["a", "b", "default"]

    to_a = api.data(PUBLISH, {"input": {"tenant": "a", "type": "order.paid", "payload": {},
                                        "id": "same-id"}})["publishEvent"]
    to_b = api.data(PUBLISH, {"input": {"tenant": "b", "type": "order.paid", "payload": {},
                                        "id": "same-id"}})["publishEvent"]
    assert not to_a["duplicate"] and not to_b["duplicate"]  # event ids are per tenant
    assert make.column("SELECT config_id FROM deliveries WHERE id = ANY(%s)",
                       ([int(i) for i in to_a["deliveryIds"]],)) == [in_a["id"]]
    assert make.column("SELECT config_id FROM deliveries WHERE id = ANY(%s)",
                       ([int(i) for i in to_b["deliveryIds"]],)) == [in_b["id"]]
    again = api.data(PUBLISH, {"input": {"tenant": "a", "type": "order.paid", "payload": {},
                                         "id": "same-id"}})["publishEvent"]
    assert again["duplicate"] and again["deliveryIds"] == to_a["deliveryIds"]
    assert api.code(PUBLISH, {"input": {"tenant": "nobody", "type": "x",
                                        "payload": {}}}) == "NOT_FOUND"


def test_a_broadcast_reaches_several_tenants_in_one_call(api, make):
    for uid in ("a", "b", "c"):
        api.data(CREATE_TENANT, {"input": {"uid": uid}})
        api.data(CREATE_CONFIG, {"input": config_input(uid, "plan.changed")})
    sent = api.data(PUBLISH, {"input": {"tenants": ["a", "c"], "type": "plan.changed",
                                        "payload": {"plan": "pro"}}})["publishEvent"]
    assert [t["tenant"] for t in sent["tenants"]] == ["a", "c"]
    assert all(len(t["deliveryIds"]) == 1 for t in sent["tenants"])
    assert make.count("SELECT count(*) FROM deliveries") == 2
    assert api.code(PUBLISH, {"input": {"tenants": ["a", "nobody"], "type": "plan.changed",
                                        "payload": {}}}) == "NOT_FOUND"
    assert make.count("SELECT count(*) FROM deliveries") == 2  # all or nothing
    assert api.code(PUBLISH, {"input": {"tenants": [f"t{n}" for n in range(1001)],
                                        "type": "x", "payload": {}}}) == "BAD_USER_INPUT"
    assert api.code(PUBLISH, {"input": {"tenant": "a", "tenants": ["b"], "type": "x",
                                        "payload": {}}}) == "BAD_USER_INPUT"


def test_a_tenant_token_reaches_its_own_tenant_only(client, pool, api):
    own = tenant_api(client, pool, "a")
    tenant_api(client, pool, "b")
    assert own.data(ME) == {"me": {"role": "OPERATOR", "tenantUid": "a"}}
    created = own.data(CREATE_CONFIG, {"input": config_input()})["createConfig"]["config"]
    assert created["tenant"]["uid"] == "a"  # no tenant named: its own
    assert own.code(CREATE_CONFIG, {"input": config_input("b")}) == "NOT_FOUND"
    assert own.code(CREATE_CONFIG, {"input": config_input("nobody")}) == "NOT_FOUND"
    assert own.data('{ tenant(uid: "a") { uid } }') == {"tenant": {"uid": "a"}}
    assert own.code('{ tenant(uid: "b") { uid } }') == "NOT_FOUND"
    for platform_only in ("{ tenants { totalCount } }", "{ stats { queueDepth } }",
                          "{ rejectedEvents { totalCount } }", "{ apiTokens { name } }"):
        assert own.code(platform_only) == "FORBIDDEN", platform_only
    assert own.code('mutation { createTenant(input: {uid: "c"}) { uid } }') == "FORBIDDEN"
    assert own.code('mutation { createApiToken(name: "x", role: VIEWER) { token } }') \
        == "FORBIDDEN"
    assert api.data(ME) == {"me": {"role": "OPERATOR", "tenantUid": None}}


def test_tokens_are_minted_for_a_tenant_and_revoked_through_the_api(client, api):
    api.data(CREATE_TENANT, {"input": {"uid": "a"}})
    minted = api.data("""mutation { createApiToken(name: "a-viewer", role: VIEWER, tenant: "a")
        { token record { name role tenantUid } } }""")["createApiToken"]
    assert minted["record"] == {"name": "a-viewer", "role": "VIEWER", "tenantUid": "a"}
    viewer = Api(client, minted["token"])
    assert viewer.data(ME) == {"me": {"role": "VIEWER", "tenantUid": "a"}}
    assert viewer.code(CREATE_CONFIG, {"input": config_input()}) == "FORBIDDEN"
    listed = api.data("{ apiTokens { name tenantUid } }")["apiTokens"]
    assert {"name": "a-viewer", "tenantUid": "a"} in listed
    api.data('mutation { revokeApiToken(name: "a-viewer") { name } }')
    assert viewer.code(ME) == "UNAUTHENTICATED"
    assert api.code('mutation { createApiToken(name: "x", role: VIEWER, tenant: "nobody") '
                    '{ token } }') == "NOT_FOUND"


def test_deleting_a_tenant_stops_its_configs_and_keeps_its_history(client, pool, api, make):
    own = tenant_api(client, pool, "a")
    config = own.data(CREATE_CONFIG, {"input": config_input()})["createConfig"]["config"]
    sent = own.data(PUBLISH, {"input": {"type": "order.paid", "payload": {}}})["publishEvent"]
    (delivery_id,) = sent["deliveryIds"]
    deleted = api.data(DELETE_TENANT, {"uid": "a"})["deleteTenant"]
    assert deleted["configsStopped"] == 1 and deleted["deliveriesCancelled"] == 1
    assert deleted["tenant"]["deletedAt"] is not None
    row = make.row(int(delivery_id))
    assert row["status"] == "cancelled" and row["last_error"] == "its tenant was deleted"
    assert not make.count("SELECT count(*) FROM configs WHERE id = %s AND active",
                          (config["id"],))
    assert own.code(ME) == "UNAUTHENTICATED"  # its tokens stop with it
    history = api.data('{ deliveries(filter: {tenant: "a"}) { edges { node { id status } } } }')
    assert history["deliveries"]["edges"] == [{"node": {"id": delivery_id,
                                                        "status": "CANCELLED"}}]
    assert api.code(CREATE_TENANT, {"input": {"uid": "a"}}) == "BAD_USER_INPUT"  # still taken
    assert api.code(CREATE_CONFIG, {"input": config_input("a")}) == "NOT_FOUND"
    assert api.code(PUBLISH, {"input": {"tenant": "a", "type": "order.paid",
                                        "payload": {}}}) == "NOT_FOUND"
    assert api.code(DELETE_TENANT, {"uid": "a"}) == "NOT_FOUND"
    assert api.data(TENANTS, {"filter": {"uid": "a"}})["tenants"]["totalCount"] == 0
    assert api.data(TENANTS, {"filter": {"uid": "a", "includeDeleted": True}}
                    )["tenants"]["totalCount"] == 1


def test_a_tenant_may_have_at_most_its_limit_of_configs(api):
    api.data(CREATE_TENANT, {"input": {"uid": "small", "limits": {"maxConfigs": 2}}})
    for _ in range(2):
        api.data(CREATE_CONFIG, {"input": config_input("small")})
    error = api.error(CREATE_CONFIG, {"input": config_input("small")})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "maxConfigs" in error["message"]
    many = """mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: $inputs)
        { config { id } } }"""
    api.data(CREATE_TENANT, {"input": {"uid": "three", "limits": {"maxConfigs": 3}}})
    assert api.code(many, {"inputs": [config_input("three")] * 4}) == "BAD_USER_INPUT"
    assert len(api.data(many, {"inputs": [config_input("three")] * 3})["createConfigs"]) == 3


def test_configs_of_many_tenants_are_created_at_once_each_in_its_tenant(api, make):
    many = """mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: $inputs)
        { config { name tenant { uid } } } }"""
    api.data(CREATE_TENANTS, {"inputs": [{"uid": f"m{n}"} for n in range(5)]
                              + [{"uid": "capped", "limits": {"maxConfigs": 1}}]})
    inputs = [{**config_input(f"m{n % 5}"), "name": f"c{n}"} for n in range(12)]
    created = api.data(many, {"inputs": inputs})["createConfigs"]
    assert [(c["config"]["name"], c["config"]["tenant"]["uid"]) for c in created] == [
        (f"c{n}", f"m{n % 5}") for n in range(12)]  # in the order given
    before = make.count("SELECT count(*) FROM configs")
    assert api.code(many, {"inputs": [config_input("m1"), config_input("capped"),
                                      config_input("capped")]}) == "BAD_USER_INPUT"
    api.data(DELETE_TENANT, {"uid": "m4"})
    assert api.code(many, {"inputs": [config_input("m1"), config_input("m4")]}) == "NOT_FOUND"
    assert api.code(many, {"inputs": [config_input("m1"), config_input("nobody")]}) \
        == "NOT_FOUND"
    refused = api.error(many, {"inputs": [config_input("m1"), config_input("bad\x00uid")]})
    assert refused["message"] == "config 2: tenant: must not contain NUL characters"
    assert make.count("SELECT count(*) FROM configs") == before  # none of them


def test_tenant_stats_count_each_tenants_own(api):
    for uid in ("a", "b"):
        api.data(CREATE_TENANT, {"input": {"uid": uid}})
        api.data(CREATE_CONFIG, {"input": config_input(uid)})
    for _ in range(3):
        api.data(PUBLISH, {"input": {"tenant": "a", "type": "order.paid", "payload": {}}})
    api.data(PUBLISH, {"input": {"tenant": "b", "type": "order.paid", "payload": {}}})
    nodes = {e["node"]["uid"]: e["node"]["stats"]
             for e in api.data(TENANTS, {})["tenants"]["edges"]}
    assert nodes["a"]["pending"] == 3 and nodes["a"]["queueDepth"] == 3
    assert nodes["b"]["pending"] == 1
    assert nodes[DEFAULT_TENANT_UID]["pending"] == 0


@pytest.mark.parametrize("given", [{"uid": "ok", "metadata": [1]}, {"uid": "ok", "name": ""},
                                   {"uid": "ok", "limits": {"maxConfigs": 0}},
                                   {"uid": "ok", "limits": {"eventsPerSecond": -1}}])
def test_bad_tenant_input_is_refused_in_words(api, given):
    error = api.error(CREATE_TENANT, {"input": given})
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error


def test_publishing_to_an_unknown_uid_creates_the_tenant_where_the_settings_say_so(
        settings, pool, telemetry, make):
    from service.web.app import create_app

    app = create_app(settings.replace(create_tenants_on_publish=True), pool=pool,
                     telemetry=telemetry)
    platform = Api(app.test_client(), tokens.create(pool, name="ops", role="operator",
                                                    tenant_id=None)[1])
    sent = platform.data(PUBLISH, {"input": {"tenant": "newcomer", "type": "x",
                                             "payload": {}}})["publishEvent"]
    assert sent["tenants"] == [{"tenant": "newcomer", "deliveryIds": [], "duplicate": False}]
    assert tenants.get(pool, PLATFORM, "newcomer").name == "newcomer"
    own = tenant_api(app.test_client(), pool, "a")
    assert own.code(PUBLISH, {"input": {"tenant": "other", "type": "x",
                                        "payload": {}}}) == "NOT_FOUND"  # tenants create none
    assert tenants.get(pool, PLATFORM, "other") is None

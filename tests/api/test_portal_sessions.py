"""Portal sessions through the API: minted and revoked by platform tokens only, acting as a
token of their tenant, limited to their capabilities and event types, stored as digests."""

from __future__ import annotations

import pytest

from db import catalog, tenants
from db.vocabulary import PortalCapability
from graphql_schema.portal_api import PortalCapability as Capability
from tests.api.conftest import Api

MINT = """mutation ($tenant: String!, $expiresIn: Int, $capabilities: [PortalCapability!],
                    $types: [String!]) {
  createPortalSession(tenant: $tenant, expiresIn: $expiresIn, capabilities: $capabilities,
                      eventTypes: $types) { url token expiresAt } }"""
CREATE = """mutation ($types: [String!]!) { createConfig(input: {
  endpoint: "https://example.com/in", eventTypes: $types}) { config { id } } }"""
PUBLISH = """mutation ($type: String!, $payload: JSON!) {
  publishEvent(input: {type: $type, payload: $payload}) { deliveryIds } }"""
EXAMPLE = {"order": 1}

# One operation each capability allows, run on the config `id` and the delivery `delivery`.
NEEDS = {
    PortalCapability.READ: "query ($id: ID!) { config(id: $id) { id } }",
    PortalCapability.MANAGE_ENDPOINTS: 'mutation ($id: ID!) { pauseConfig(id: $id) '
                                       '{ changed } }',
    PortalCapability.ROTATE_SECRET: 'mutation ($id: ID!) { rotateConfigSecret(id: $id) '
                                    '{ secret } }',
    PortalCapability.REPLAY: 'mutation ($delivery: ID!) { replayDelivery(id: $delivery) '
                             '{ action } }',
    PortalCapability.SEND_EXAMPLE: 'mutation { publishEvent(input: {type: "order.created", '
                                   'payload: {order: 1}}) { deliveryIds } }',
}


@pytest.fixture
def shop(pool, make) -> dict:
    tenant = tenants.create(pool, uid="cus_shop")
    catalog.create(pool, name="order.created", examples=[EXAMPLE])
    catalog.create(pool, name="invoice.paid", examples=[{"invoice": 1}])
    config = make.config(event_types=["order.created"], tenant_id=tenant.id)
    return {"tenant": tenant, "config": config, "delivery": make.delivery(config)}


def session(api: Api, tenant: str = "cus_shop", **arguments) -> Api:
    minted = api.data(MINT, {"tenant": tenant, **arguments})["createPortalSession"]
    return Api(api.client, minted["token"])


def test_a_platform_mints_a_session_that_acts_as_its_tenant_and_is_kept_as_a_digest(
        api, make, shop):
    minted = api.data(MINT, {"tenant": "cus_shop"})["createPortalSession"]
    assert minted["token"].startswith("whp_")
    assert minted["url"] == f"http://localhost/portal?tenant=cus_shop#token={minted['token']}"
    portal = Api(api.client, minted["token"])
    me = portal.data("{ me { role tenantUid portal { capabilities eventTypes expiresAt } } }")
    assert me["me"]["tenantUid"] == "cus_shop" and me["me"]["role"] == "OPERATOR"
    assert me["me"]["portal"] == {"capabilities": [c.name for c in PortalCapability],
                                  "eventTypes": None, "expiresAt": minted["expiresAt"]}
    other = make.config()  # the default tenant's
    assert portal.code("query ($id: ID!) { config(id: $id) { id } }",
                       {"id": other.id}) == "NOT_FOUND"
    listed = portal.data("{ configs { edges { node { id } } } }")["configs"]["edges"]
    assert [edge["node"]["id"] for edge in listed] == [shop["config"].id]
    stored = make.rows("SELECT token_hash, capabilities FROM portal_sessions")
    assert len(stored) == 1 and minted["token"] not in repr(stored)
    assert api.data("{ me { portal { capabilities } } }") == {"me": {"portal": None}}


def test_sessions_are_minted_and_revoked_by_platform_tokens_only(api, client, pool, shop):
    portal = session(api)
    assert portal.code(MINT, {"tenant": "cus_shop"}) == "FORBIDDEN"
    assert portal.code('mutation { revokePortalSessions(tenant: "cus_shop") }') == "FORBIDDEN"
    second = session(api)
    assert api.data('mutation { revokePortalSessions(tenant: "cus_shop") }') == \
        {"revokePortalSessions": 2}
    for revoked in (portal, second):
        assert revoked.code("{ me { role } }") == "UNAUTHENTICATED"
    assert api.data('mutation { revokePortalSessions(tenant: "cus_shop") }') == \
        {"revokePortalSessions": 0}
    assert api.code(MINT, {"tenant": "cus_nobody"}) == "NOT_FOUND"


def test_an_expired_session_or_one_of_a_deleted_tenant_is_unauthenticated(api, make, pool, shop):
    expired, live = session(api), session(api)
    make.count("WITH moved AS (UPDATE portal_sessions SET created_at = now() - interval '2 h', "
               "expires_at = now() - interval '1 h' WHERE id = (SELECT min(id) FROM "
               "portal_sessions) RETURNING 1) SELECT count(*) FROM moved")
    assert expired.code("{ me { role } }") == "UNAUTHENTICATED"
    assert live.data("{ me { tenantUid } }") == {"me": {"tenantUid": "cus_shop"}}
    tenants.delete(pool, "cus_shop", actor="test")
    assert live.code("{ me { role } }") == "UNAUTHENTICATED"


@pytest.mark.parametrize("arguments", [
    {"expiresIn": 59}, {"expiresIn": 86401}, {"capabilities": []}, {"types": []},
    {"types": ["in*valid"]},
])
def test_a_session_asked_out_of_bounds_is_bad_user_input(api, shop, arguments):
    assert api.code(MINT, {"tenant": "cus_shop", **arguments}) == "BAD_USER_INPUT"


@pytest.mark.parametrize("capability", list(PortalCapability))
def test_each_capability_alone_opens_its_operations_and_nothing_else(api, shop, capability):
    variables = {"id": shop["config"].id, "delivery": str(shop["delivery"])}
    granted = session(api, capabilities=[Capability[capability.name].name])
    for needed, operation in NEEDS.items():
        used = {name: value for name, value in variables.items() if f"${name}" in operation}
        headers = {"Idempotency-Key": f"k-{needed}"}
        response = granted.post(operation, used, headers=headers).get_json()
        codes = [error["extensions"]["code"] for error in response.get("errors", [])]
        if needed == capability:
            assert codes == [], (needed, response)
        else:
            assert codes == ["FORBIDDEN"], (needed, response)
            assert needed.name in response["errors"][0]["message"]


def test_a_session_subscribes_only_to_the_types_it_was_given(api, shop):
    portal = session(api, types=["invoice.*", "order.created"])
    for allowed in (["invoice.paid"], ["invoice.*"], ["invoice.paid.late", "order.created"]):
        assert portal.data(CREATE, {"types": allowed})["createConfig"]["config"]["id"]
    for refused in (["*"], ["order.*"], ["order.refunded"], ["invoice.paid", "refund.made"]):
        error = portal.error(CREATE, {"types": refused})
        assert error["extensions"]["code"] == "FORBIDDEN", refused
        assert "invoice.*, order.created" in error["message"]
    update = 'mutation ($id: ID!) { updateConfig(id: $id, input: {eventTypes: ["*"]}) { id } }'
    assert portal.code(update, {"id": shop["config"].id}) == "FORBIDDEN"
    assert session(api).data(CREATE, {"types": ["*"]})  # no eventTypes: any


def test_a_session_changes_no_config_beyond_its_types_but_may_stop_or_narrow_it(api, make,
                                                                                shop):
    """A config the platform subscribed wider than the session's types is never pointed at
    another endpoint, activated, resumed, reset or given a new secret by the session: that
    would send it the types it was not given. It may stop it, or narrow it within them."""
    wide = make.config(event_types=["*"], tenant_id=shop["tenant"].id,
                       endpoint="https://example.com/all")
    portal = session(api, types=["order.created"])
    by_id = {"id": wide.id}
    moved = 'mutation ($id: ID!) { updateConfig(id: $id, input: {endpoint: ' \
            '"https://attacker.example/in"}) { id } }'
    refused = [moved,
               'mutation ($id: ID!) { updateConfig(id: $id, input: {name: "mine"}) { id } }',
               "mutation ($id: ID!) { rotateConfigSecret(id: $id) { secret } }",
               "mutation ($id: ID!) { resumeConfig(id: $id) { changed } }",
               "mutation ($id: ID!) { resetCircuit(id: $id) { changed } }"]
    api.data("mutation ($id: ID!) { pauseConfig(id: $id) { changed } }", by_id)
    for document in refused:
        error = portal.error(document, by_id)
        assert error["extensions"]["code"] == "FORBIDDEN", document
        assert "'*'" in error["message"] and "order.created" in error["message"]
    api.data("mutation ($id: ID!) { deactivateConfig(id: $id) { cancelledDeliveries } }",
             by_id)
    assert portal.code("mutation ($id: ID!) { activateConfig(id: $id) { id } }",
                       by_id) == "FORBIDDEN"
    shown = api.data('query ($id: ID!) { config(id: $id) { endpoint name active '
                     'health { state } } }', by_id)["config"]
    assert shown == {"endpoint": "https://example.com/all", "name": None, "active": False,
                     "health": {"state": "PAUSED"}}
    narrowed = portal.data('mutation ($id: ID!) { updateConfig(id: $id, input: {eventTypes: '
                           '["order.created"], endpoint: "https://example.com/orders"}) '
                           '{ eventTypes endpoint } }', by_id)["updateConfig"]
    assert narrowed == {"eventTypes": ["order.created"], "endpoint": "https://example.com/orders"}
    assert portal.data("mutation ($id: ID!) { activateConfig(id: $id) { active } }", by_id)
    other = make.config(event_types=["*"], tenant_id=shop["tenant"].id)
    for stop in ("pauseConfig(id: $id) { changed }",
                 "deactivateConfig(id: $id) { cancelledDeliveries }",
                 "deleteConfig(id: $id) { cancelledDeliveries }"):
        assert portal.data(f"mutation ($id: ID!) {{ {stop} }}", {"id": other.id}), stop


def test_a_session_publishes_only_catalog_examples_of_its_types_to_its_tenant(api, make, shop):
    portal = session(api, types=["order.created"])
    sent = portal.data(PUBLISH, {"type": "order.created", "payload": EXAMPLE})["publishEvent"]
    assert sent["deliveryIds"] and make.row(int(sent["deliveryIds"][0]))["tenant_id"] == \
        shop["tenant"].id
    for kind, payload in (("order.created", {"order": 2}), ("invoice.paid", {"invoice": 1}),
                          ("unknown.type", {})):
        assert portal.code(PUBLISH, {"type": kind, "payload": payload}) == "FORBIDDEN", kind
    assert portal.code('mutation { publishEvent(input: {type: "order.created", tenant: '
                       '"default", payload: {order: 1}}) { eventId } }') == "NOT_FOUND"
    assert api.data(PUBLISH, {"type": "order.created", "payload": {"any": "thing"}})


def test_a_read_only_session_is_a_viewer(api, shop):
    portal = session(api, capabilities=["READ"])
    assert portal.data("{ me { role canMutate } }") == {"me": {"role": "VIEWER",
                                                               "canMutate": False}}

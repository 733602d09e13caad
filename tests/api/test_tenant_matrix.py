"""Tenant isolation, field by field, generated from the committed schema.graphql.

Every root field of the schema, every object field that takes arguments, and every field that
names an object's tenant must have a row in MATRIX: what a token of tenant A gets when it
names tenant B's objects, B's uid, or a cursor B was given. Another tenant's object is
NOT_FOUND (never FORBIDDEN: that would say it exists), a listing filtered on it is empty, a
cursor of B's is BAD_USER_INPUT, and the platform's own fields are FORBIDDEN. A field added to
the schema without a row fails `test_every_field_that_reaches_tenant_data_has_a_row`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from graphql import GraphQLObjectType, build_schema, get_named_type

from db import configs, deliveries, events, health, portal_sessions, tenants, tokens
from db.scope import PLATFORM
from db.vocabulary import PortalCapability
from graphql_schema.schema import SCHEMA_FILE
from tests.api.conftest import Api
from tests.endpoint_health import RULES, claim, result

TENANT_OWNED = {"Tenant"}  # a field returning one of these names whose tenant it is
LONG_AGO = (datetime.now(UTC) - timedelta(days=30)).isoformat()


@dataclasses.dataclass
class World:
    """Tenants A and B with their data; `a` acts for A, `b` for B, `platform` for all."""

    a: Api
    b: Api
    platform: Api
    make: object
    a_config: str
    b_config: str
    a_delivery: str
    b_failed: str  # a failed delivery of B that holds its key
    b_pending: str
    b_webhook_id: str
    cursors: dict[str, str]  # listing -> a cursor B was given

    def b_unchanged(self) -> None:
        """Assert that B's config and deliveries are as the set-up left them."""
        config = configs.get(self.make.pool, PLATFORM, self.b_config)
        assert config is not None and config.active and config.name == "b-config"
        assert health.of_configs(self.make.pool, PLATFORM, [self.b_config])[
            self.b_config].state == "healthy"
        assert self.make.row(int(self.b_failed))["status"] == "failed"
        assert self.make.row(int(self.b_failed))["blocks_key"]


def _publish(pool, tenant_id: int, n: int, key: str) -> int:
    event = events.new_event(f"evt-{n}", "ledger", {"n": n}, tenant_id=tenant_id,
                             max_payload=1000, ordering_key=key)
    (delivery_id,) = events.publish(pool, event).delivery_ids
    return delivery_id


def _fail_what_is_due(make) -> None:
    rules = dataclasses.replace(RULES, failures_to_open=1000)
    for one in claim(make, limit=50, rules=rules):
        failed = dataclasses.replace(result(one, 400), next_status="failed", next_delay=None)
        deliveries.record_and_settle(make.pool, [failed], rules)


@pytest.fixture(params=["tenant token", "portal session"])
def world(request, client, api, make) -> World:
    """The world, A acting through its operator token or through a portal session granted
    every capability (which must reach exactly what the token reaches)."""
    pool = make.pool
    ids = {uid: tenants.create(pool, uid=uid).id for uid in ("a", "b")}
    clients = {uid: Api(client, tokens.create(pool, name=f"{uid}-ops", role="operator",
                                              tenant_id=ids[uid])[1]) for uid in ids}
    if request.param == "portal session":
        clients["a"] = Api(client, portal_sessions.create(
            pool, tenant_id=ids["a"], expires_in=3600, capabilities=list(PortalCapability),
            event_types=None, created_by="platform").token)
    made = {}
    for uid in ids:
        for n in range(2):  # two configs each: their listings have a second page
            config, _ = configs.create(pool, ids[uid], endpoint="https://example.com/in",
                                       event_types=["ledger" if n == 0 else "other"],
                                       name=f"{uid}-config", ordering="per_key")
            made.setdefault(uid, []).append(config.id)
    b_failed = _publish(pool, ids["b"], 1, "k1")
    _publish(pool, ids["b"], 2, "k2")
    a_delivery = _publish(pool, ids["a"], 3, "k1")
    _fail_what_is_due(make)  # B's heads of k1 and k2 and A's fail, and hold their keys
    b_pending = _publish(pool, ids["b"], 4, "k1")
    for config_id in made["b"]:
        health.pause(pool, PLATFORM, config_id, reason="history")
        health.resume(pool, PLATFORM, config_id, reason="history")
    b_config = make.column("SELECT config_id FROM deliveries WHERE id = %s", (b_failed,))[0]
    b = clients["b"]
    cursors = {
        "configs": b.data("{ configs(first: 1) { pageInfo { endCursor } } }")
        ["configs"]["pageInfo"]["endCursor"],
        "deliveries": b.data("{ deliveries(first: 1) { pageInfo { endCursor } } }")
        ["deliveries"]["pageInfo"]["endCursor"],
        "blockedKeys": b.data('query ($id: ID!) { config(id: $id) { blockedKeys(first: 1) '
                              '{ endCursor } } }', {"id": b_config})
        ["config"]["blockedKeys"]["endCursor"],
        "healthChanges": b.data('query ($id: ID!) { config(id: $id) { healthChanges(first: 1) '
                                '{ endCursor } } }', {"id": b_config})
        ["config"]["healthChanges"]["endCursor"],
        "replayDeliveries": b.data(
            'mutation ($after: DateTime!) { replayDeliveries(filter: {createdAfter: $after, '
            'status: [FAILED, PENDING]}, first: 1) { nextCursor } }', {"after": LONG_AGO},
            headers={"Idempotency-Key": "b-page-1"})["replayDeliveries"]["nextCursor"],
    }
    assert all(cursors.values()), cursors
    webhook_id = make.row(b_failed)["webhook_id"]
    return World(a=clients["a"], b=b, platform=api, make=make, a_config=made["a"][0],
                 b_config=b_config, a_delivery=str(a_delivery), b_failed=str(b_failed),
                 b_pending=str(b_pending), b_webhook_id=webhook_id, cursors=cursors)


def _not_found(w: World, document: str, variables: dict | None = None,
               idempotency: bool = False) -> None:
    headers = {"Idempotency-Key": "a-key"} if idempotency else None
    assert w.a.code(document, variables, headers=headers) == "NOT_FOUND", document
    w.b_unchanged()


def _forbidden(w: World, document: str, variables: dict | None = None) -> None:
    assert w.a.code(document, variables) == "FORBIDDEN", document


def _bad_cursor(w: World, document: str, variables: dict) -> None:
    error = w.a.error(document, variables, headers={"Idempotency-Key": "a-cursor"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "cursor" in error["message"]


# -- the rows -------------------------------------------------------------------------------

def deliveries_listing(w: World) -> None:
    listed = "query ($filter: DeliveryFilter, $after: String) { deliveries(filter: $filter, " \
             "after: $after) { edges { node { id configId tenant { uid } } } totalCount } }"
    everything = w.a.data(listed)["deliveries"]
    assert {e["node"]["tenant"]["uid"] for e in everything["edges"]} == {"a"}
    assert everything["totalCount"] == 1
    for filter in ({"configIds": [w.b_config]}, {"webhookId": w.b_webhook_id},
                   {"eventId": "evt-1"}, {"orderingKey": "k2"}):
        page = w.a.data(listed, {"filter": filter})["deliveries"]
        assert page == {"edges": [], "totalCount": 0}, filter
    _not_found(w, listed, {"filter": {"tenant": "b"}})
    _bad_cursor(w, listed, {"after": w.cursors["deliveries"]})


def config_listing(w: World) -> None:
    listed = "query ($filter: ConfigFilter, $after: String) { configs(filter: $filter, " \
             "after: $after) { edges { node { id name tenant { uid } } } totalCount } }"
    everything = w.a.data(listed)["configs"]
    assert {e["node"]["name"] for e in everything["edges"]} == {"a-config"}
    assert everything["totalCount"] == 2
    for filter in ({"search": w.b_config}, {"search": "b-config"}, {"health": "HEALTHY",
                                                                     "search": "b-"}):
        assert w.a.data(listed, {"filter": filter})["configs"] == {"edges": [],
                                                                   "totalCount": 0}
    _not_found(w, listed, {"filter": {"tenant": "b"}})
    _bad_cursor(w, listed, {"after": w.cursors["configs"]})


def attempt_history(w: World) -> None:
    found = w.a.data("query ($ids: [ID!]) { attemptHistory(configIds: $ids) { configs "
                     "{ configId attempts } buckets { attempts } } }",
                     {"ids": [w.b_config]})["attemptHistory"]
    assert found["configs"] == [] and sum(b["attempts"] for b in found["buckets"]) == 0
    everything = w.a.data("{ attemptHistory { configs { configId } buckets { attempts } } }"
                          )["attemptHistory"]
    assert sum(b["attempts"] for b in everything["buckets"]) == 1  # A's one failure
    assert [c["configId"] for c in everything["configs"]] == [w.a_config]
    own = w.a.data('{ attemptHistory(tenant: "a") { configs { configId } } }')
    assert own["attemptHistory"] == {"configs": [{"configId": w.a_config}]}
    _not_found(w, '{ attemptHistory(tenant: "b") { complete } }')


def needing_attention(w: World) -> None:
    health.pause(w.make.pool, PLATFORM, w.b_config, reason="b is held")
    listed = w.a.data("{ configsNeedingAttention { config { id tenant { uid } } } }")
    assert {row["config"]["tenant"]["uid"]
            for row in listed["configsNeedingAttention"]} <= {"a"}
    assert w.a.data('{ configsNeedingAttention(tenant: "a") { config { id tenant { uid } } } }'
                    )["configsNeedingAttention"] == listed["configsNeedingAttention"]
    health.resume(w.make.pool, PLATFORM, w.b_config, reason="test")
    _not_found(w, '{ configsNeedingAttention(tenant: "b") { failures } }')


def blocked_keys(w: World) -> None:
    query = "query ($id: ID!, $after: String) { config(id: $id) { blockedKeys(after: $after) " \
            "{ edges { node { deliveryId } } } } }"
    own = w.a.data(query, {"id": w.a_config})["config"]["blockedKeys"]["edges"]
    assert [e["node"]["deliveryId"] for e in own] in ([], [w.a_delivery])
    _bad_cursor(w, query, {"id": w.a_config, "after": w.cursors["blockedKeys"]})
    _not_found(w, query, {"id": w.b_config})


def health_changes(w: World) -> None:
    query = "query ($id: ID!, $after: String) { config(id: $id) { healthChanges(after: " \
            "$after) { edges { node { id } } } } }"
    _bad_cursor(w, query, {"id": w.a_config, "after": w.cursors["healthChanges"]})
    _not_found(w, query, {"id": w.b_config})


def recent_attempts(w: World) -> None:
    query = "query ($id: ID!) { config(id: $id) { recentAttempts { attempts } } }"
    _not_found(w, query, {"id": w.b_config})


def delivery_attempts(w: World) -> None:
    query = "query ($id: ID!) { delivery(id: $id) { attempts { id } tenant { uid } } }"
    assert w.a.data(query, {"id": w.a_delivery})["delivery"]["tenant"] == {"uid": "a"}
    _not_found(w, query, {"id": w.b_failed})


def config_tenant(w: World) -> None:
    found = w.a.data("query ($id: ID!) { config(id: $id) { tenant { uid } } }",
                     {"id": w.a_config})
    assert found["config"]["tenant"] == {"uid": "a"}


def replay_one(w: World) -> None:
    replay = "mutation ($id: ID!) { replayDelivery(id: $id) { action } }"
    _not_found(w, replay, {"id": w.b_failed}, idempotency=True)
    # Idempotency keys are per tenant: B's key, sent by A for its own delivery, is A's own.
    assert w.b.code(replay, {"id": w.b_pending},
                    headers={"Idempotency-Key": "shared"}) == "NOT_ELIGIBLE"
    assert w.a.data(replay, {"id": w.a_delivery}, headers={"Idempotency-Key": "shared"}
                    )["replayDelivery"]["action"] == "REPLAYED"


def replay_many(w: World) -> None:
    bulk = "mutation ($filter: DeliveryFilter!, $after: String, $dry: Boolean!) { " \
           "replayDeliveries(filter: $filter, after: $after, dryRun: $dry) { replayed " \
           "expedited skipped { deliveryId } wouldReplay } }"
    mine = {"createdAfter": LONG_AGO, "configIds": [w.b_config]}
    dry = w.a.data(bulk, {"filter": mine, "dry": True})["replayDeliveries"]
    assert dry["wouldReplay"] == 0
    done = w.a.data(bulk, {"filter": mine, "dry": False},
                    headers={"Idempotency-Key": "a-bulk"})["replayDeliveries"]
    assert done == {"replayed": [], "expedited": [], "skipped": [], "wouldReplay": None}
    _bad_cursor(w, bulk, {"filter": {"createdAfter": LONG_AGO, "status": ["PENDING"]},
                          "after": w.cursors["replayDeliveries"], "dry": False})
    _not_found(w, bulk, {"filter": {"createdAfter": LONG_AGO, "tenant": "b"}, "dry": True})
    w.b_unchanged()


def of_config(mutation: str, selection: str, **extra: str) -> Callable[[World], None]:
    arguments = "".join(f", {name}: {value}" for name, value in extra.items())

    def check(w: World) -> None:
        _not_found(w, f'mutation ($id: ID!) {{ {mutation}(id: $id{arguments}) {selection} }}',
                   {"id": w.b_config})

    return check


def of_delivery(mutation: str, selection: str) -> Callable[[World], None]:
    def check(w: World) -> None:
        _not_found(w, f"mutation ($id: ID!) {{ {mutation}(id: $id) {selection} }}",
                   {"id": w.b_failed}, idempotency=True)

    return check


def platform_only(document: str) -> Callable[[World], None]:
    return lambda w: _forbidden(w, document)


def create_in_b(w: World) -> None:
    one = {"endpoint": "https://example.com/x", "eventTypes": ["ledger"], "tenant": "b"}
    _not_found(w, "mutation ($input: CreateConfigInput!) { createConfig(input: $input) "
                  "{ secret } }", {"input": one})
    _not_found(w, "mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: "
                  "$inputs) { secret } }", {"inputs": [{**one, "tenant": None}, one]})
    assert w.make.count("SELECT count(*) FROM configs c JOIN tenants t ON t.id = c.tenant_id "
                        "WHERE t.uid = 'b'") == 2


def publish_to_b(w: World) -> None:
    before = w.make.count("SELECT count(*) FROM deliveries")
    publish = "mutation ($input: PublishEventInput!) { publishEvent(input: $input) " \
              "{ eventId } }"
    _not_found(w, publish, {"input": {"tenant": "b", "type": "ledger", "payload": {}}})
    _not_found(w, publish, {"input": {"tenants": ["a", "b"], "type": "ledger",
                                      "payload": {}}})
    assert w.make.count("SELECT count(*) FROM deliveries") == before


def me(w: World) -> None:
    assert w.a.data("{ me { tenantUid } }") == {"me": {"tenantUid": "a"}}


def tenant_by_uid(w: World) -> None:
    _not_found(w, '{ tenant(uid: "b") { uid } }')
    assert w.a.data('{ tenant(uid: "a") { uid stats { pending } } }')["tenant"]["uid"] == "a"


def catalog_is_shared(w: World) -> None:
    """The catalog is the platform's, the same for every tenant: it holds no tenant's data."""
    query = "{ eventTypes { edges { node { name schema(version: 1) } } } }"
    w.platform.data('mutation { createEventType(input: {name: "shared.one", schema: '
                    '{type: "object"}}) { name } }')
    assert w.a.data(query) == w.b.data(query) == w.platform.data(query)
    assert w.a.data('{ eventType(name: "shared.one") { name } }') == \
        w.b.data('{ eventType(name: "shared.one") { name } }')


def filter_test_reads_nothing(w: World) -> None:
    """testFilter judges the filter and payload it is given: no tenant's data is in it."""
    query = '{ testFilter(filter: {n: 1}, payload: {n: 1}) { matched reason } }'
    assert w.a.data(query) == w.b.data(query) == w.platform.data(query) == {
        "testFilter": {"matched": True, "reason": "n is 1, which satisfies {\"$eq\": 1}"}}


MATRIX: dict[str, Callable[[World], None]] = {
    "Query.deliveries": deliveries_listing,
    "Query.delivery": lambda w: _not_found(
        w, "query ($id: ID!) { delivery(id: $id) { id } }", {"id": w.b_failed}),
    "Query.configs": config_listing,
    "Query.config": lambda w: _not_found(
        w, "query ($id: ID!) { config(id: $id) { id } }", {"id": w.b_config}),
    "Query.stats": platform_only("{ stats { queueDepth } }"),
    "Query.attemptHistory": attempt_history,
    "Query.configsNeedingAttention": needing_attention,
    "Query.me": me,
    "Query.rejectedEvents": platform_only("{ rejectedEvents { totalCount } }"),
    "Query.tenants": platform_only("{ tenants { totalCount } }"),
    "Query.tenant": tenant_by_uid,
    "Query.apiTokens": platform_only("{ apiTokens { name } }"),
    "Mutation.createConfig": create_in_b,
    "Mutation.createConfigs": create_in_b,
    "Mutation.updateConfig": of_config("updateConfig", "{ id }", input='{name: "taken"}'),
    "Mutation.activateConfig": of_config("activateConfig", "{ id }"),
    "Mutation.deactivateConfig": of_config("deactivateConfig", "{ cancelledDeliveries }"),
    "Mutation.deleteConfig": of_config("deleteConfig", "{ cancelledDeliveries }"),
    "Mutation.rotateConfigSecret": of_config("rotateConfigSecret", "{ secret }"),
    "Mutation.pauseConfig": of_config("pauseConfig", "{ changed }"),
    "Mutation.resumeConfig": of_config("resumeConfig", "{ changed }"),
    "Mutation.resetCircuit": of_config("resetCircuit", "{ changed }"),
    "Mutation.publishEvent": publish_to_b,
    "Mutation.skipDelivery": of_delivery("skipDelivery", "{ sequence }"),
    "Mutation.replayDelivery": replay_one,
    "Mutation.replayDeliveries": replay_many,
    "Mutation.createTenant": platform_only('mutation { createTenant(input: {uid: "c"}) '
                                           '{ uid } }'),
    "Mutation.createTenants": platform_only('mutation { createTenants(inputs: [{uid: "c"}]) '
                                            '{ uid } }'),
    "Mutation.updateTenant": platform_only('mutation { updateTenant(uid: "b", input: '
                                           '{name: "x"}) { uid } }'),
    "Mutation.deleteTenant": platform_only('mutation { deleteTenant(uid: "b") '
                                           '{ configsStopped } }'),
    "Mutation.createApiToken": platform_only('mutation { createApiToken(name: "x", '
                                             'role: OPERATOR, tenant: "b") { token } }'),
    "Mutation.revokeApiToken": platform_only('mutation { revokeApiToken(name: "b-ops") '
                                             '{ name } }'),
    "Config.recentAttempts": recent_attempts,
    "Config.blockedKeys": blocked_keys,
    "Config.healthChanges": health_changes,
    "Config.tenant": config_tenant,
    "Delivery.attempts": delivery_attempts,
    "Delivery.tenant": delivery_attempts,
    "DeliverySummary.tenant": deliveries_listing,
    "Mutation.replayRejectedEvent": platform_only('mutation { replayRejectedEvent(id: "1") '
                                                  '{ replayed { eventId } } }'),
    "Mutation.replayRejectedEvents": platform_only('mutation { replayRejectedEvents(tenant: '
                                                   '"b") { replayed { eventId } } }'),
    "Query.eventTypes": catalog_is_shared,
    "Query.eventType": catalog_is_shared,
    "EventType.schema": catalog_is_shared,
    "Mutation.createEventType": platform_only('mutation { createEventType(input: '
                                              '{name: "a.b"}) { name } }'),
    "Mutation.updateEventType": platform_only('mutation { updateEventType(name: "a.b", '
                                              'input: {description: "x"}) { name } }'),
    "Mutation.deprecateEventType": platform_only('mutation { deprecateEventType(name: '
                                                 '"a.b", reason: "x") { name } }'),
    "Mutation.createPortalSession": platform_only('mutation { createPortalSession(tenant: '
                                                  '"b") { token } }'),
    "Mutation.revokePortalSessions": platform_only('mutation { revokePortalSessions(tenant: '
                                                   '"b") }'),
    "Query.testFilter": filter_test_reads_nothing,
    "TenantEdge.node": platform_only("{ tenants { edges { node { uid } } } }"),
    "TenantDeletion.tenant": platform_only('mutation { deleteTenant(uid: "b") '
                                           '{ tenant { uid } } }'),
}


def fields_reaching_tenant_data() -> set[str]:
    """Return the fields of the committed schema that need a row: every root field, every
    object field that takes arguments, every field that returns a tenant."""
    schema = build_schema(SCHEMA_FILE.read_text())
    needed = set()
    for type_name, kind in schema.type_map.items():
        if not isinstance(kind, GraphQLObjectType) or type_name.startswith("__"):
            continue
        root = kind in (schema.query_type, schema.mutation_type)
        for name, field in kind.fields.items():
            returns = get_named_type(field.type).name
            if root or field.args or (returns in TENANT_OWNED and type_name != "Query"):
                needed.add(f"{type_name}.{name}")
    return needed


def test_every_field_that_reaches_tenant_data_has_a_row():
    needed = fields_reaching_tenant_data()
    assert not needed - set(MATRIX), f"fields without a row: {sorted(needed - set(MATRIX))}"
    assert not set(MATRIX) - needed, f"rows of no field: {sorted(set(MATRIX) - needed)}"


@pytest.mark.parametrize("field", sorted(MATRIX))
def test_a_tenant_token_or_portal_session_reaches_nothing_of_another_tenant(field, world):
    MATRIX[field](world)
    world.b_unchanged()

"""The catalog of event types through the API: types with versioned JSON Schemas, checked at
publish (the JSON path and the rule that failed); strict mode refusing unknown types with the
close names; wildcard subscriptions; the same catalog for every tenant."""

from __future__ import annotations

import pytest

from db import tenants, tokens
from tests.api.conftest import Api

CREATE = """mutation ($input: CreateEventTypeInput!) { createEventType(input: $input)
  { name schemaVersion deprecated schema groupName examples } }"""
UPDATE = """mutation ($name: String!, $input: UpdateEventTypeInput!) {
  updateEventType(name: $name, input: $input) { name schemaVersion schema description } }"""
PUBLISH = """mutation ($input: PublishEventInput!) { publishEvent(input: $input) {
  eventId deliveryIds } }"""
CREATE_CONFIG = """mutation ($input: CreateConfigInput!) { createConfig(input: $input)
  { config { id eventTypes } } }"""
INVOICE = {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 0},
                                            "currency": {"type": "string"}},
           "required": ["amount"]}


def publish(api: Api, type: str, payload) -> dict:
    return api.post(PUBLISH, {"input": {"type": type, "payload": payload}}).get_json()


def test_a_type_is_created_with_a_schema_that_payloads_must_satisfy(api, make):
    created = api.data(CREATE, {"input": {"name": "invoice.paid", "schema": INVOICE,
                                          "groupName": "billing",
                                          "examples": [{"amount": 10}]}})["createEventType"]
    assert created == {"name": "invoice.paid", "schemaVersion": 1, "deprecated": False,
                       "schema": INVOICE, "groupName": "billing",
                       "examples": [{"amount": 10}]}
    ok = publish(api, "invoice.paid", {"amount": 5, "currency": "EUR"})
    assert "errors" not in ok, ok
    assert make.column("SELECT schema_version FROM events WHERE id = %s",
                       (ok["data"]["publishEvent"]["eventId"],)) == [1]
    error = api.error(PUBLISH, {"input": {"type": "invoice.paid", "payload": {"amount": -1}}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "$.amount" in error["message"] and "minimum" in error["message"]
    assert "version 1" in error["message"]
    missing = api.error(PUBLISH, {"input": {"type": "invoice.paid", "payload": {}}})
    assert "required" in missing["message"]
    assert make.count("SELECT count(*) FROM events") == 1  # refused ones store nothing
    open_type = publish(api, "not.in.catalog", {"anything": True})  # open mode: accepted
    assert "errors" not in open_type, open_type


def test_a_new_schema_is_a_new_version_and_the_old_stays_readable(api):
    api.data(CREATE, {"input": {"name": "user.created", "schema": {"type": "object"}}})
    stricter = {"type": "object", "required": ["email"]}
    updated = api.data(UPDATE, {"name": "user.created", "input": {
        "schema": stricter, "description": "a user signed up"}})["updateEventType"]
    assert updated == {"name": "user.created", "schemaVersion": 2, "schema": stricter,
                       "description": "a user signed up"}
    old = api.data('{ eventType(name: "user.created") { schema(version: 1) } }')
    assert old["eventType"]["schema"] == {"type": "object"}
    assert api.code('{ eventType(name: "user.created") { schema(version: 3) } }') \
        == "BAD_USER_INPUT"
    assert "version 2" in api.error(PUBLISH, {"input": {"type": "user.created",
                                                        "payload": {}}})["message"]
    cleared = api.data(UPDATE, {"name": "user.created", "input": {"schema": None}})
    assert cleared["updateEventType"]["schemaVersion"] == 0
    assert "errors" not in publish(api, "user.created", {})
    again = api.data(UPDATE, {"name": "user.created", "input": {"schema": stricter}})
    assert again["updateEventType"]["schemaVersion"] == 3  # versions are never reused


@pytest.mark.parametrize("given", [
    {"name": "bad name"}, {"name": "a..b"}, {"name": "x*"},
    {"name": "ok.one", "schema": {"type": "no-such-type"}},
    {"name": "ok.two", "schema": {"type": "integer"}, "examples": ["text"]},
    {"name": "ok.three", "examples": {"not": "a list"}}])
def test_bad_catalog_input_is_refused_in_words(api, given):
    error = api.error(CREATE, {"input": given})
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error


def test_types_are_listed_by_name_and_deprecated_ones_on_request(api):
    for name, group in (("b.one", "g"), ("a.one", "g"), ("c.one", None)):
        api.data(CREATE, {"input": {"name": name, "groupName": group}})
    api.data('mutation { deprecateEventType(name: "c.one", reason: "use a.one") '
             '{ deprecated } }')
    listed = "query ($filter: EventTypeFilter, $after: String) { eventTypes(filter: $filter, " \
             "first: 1, after: $after) { edges { cursor node { name } } pageInfo " \
             "{ hasNextPage endCursor } } }"
    names, after = [], None
    while True:
        page = api.data(listed, {"after": after})["eventTypes"]
        names += [edge["node"]["name"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert names == ["a.one", "b.one"]
    everything = api.data(listed, {"filter": {"includeDeprecated": True, "nameContains": "C."}})
    assert [e["node"]["name"] for e in everything["eventTypes"]["edges"]] == ["c.one"]
    assert api.code('{ eventType(name: "nope") { name } }') == "NOT_FOUND"
    assert api.code('mutation { deprecateEventType(name: "nope", reason: "x") { name } }') \
        == "NOT_FOUND"


def test_every_tenant_reads_the_same_catalog_and_only_the_platform_changes_it(client, pool,
                                                                              api):
    api.data(CREATE, {"input": {"name": "shared.type"}})
    tenant = tenants.create(pool, uid="a")
    own = Api(client, tokens.create(pool, name="a-ops", role="operator",
                                    tenant_id=tenant.id)[1])
    assert own.data('{ eventType(name: "shared.type") { name } }')["eventType"]["name"] \
        == "shared.type"
    assert own.code(CREATE, {"input": {"name": "mine"}}) == "FORBIDDEN"


def test_wildcard_subscriptions_receive_the_types_below_their_prefix(api, make):
    prefix = api.data(CREATE_CONFIG, {"input": {"endpoint": "https://e.com/a",
                                                "eventTypes": ["invoice.*"]}})
    everything = api.data(CREATE_CONFIG, {"input": {"endpoint": "https://e.com/b",
                                                    "eventTypes": ["*"]}})
    ids = {prefix["createConfig"]["config"]["id"]: "prefix",
           everything["createConfig"]["config"]["id"]: "all"}
    for type in ("invoice.paid", "invoice.paid.late", "invoices.sent", "invoice"):
        api.data(PUBLISH, {"input": {"type": type, "payload": {}, "id": type}})
    got = make.rows("SELECT event_id, config_id FROM deliveries ORDER BY event_id")
    assert sorted((event, ids[config]) for event, config in got) == sorted([
        ("invoice", "all"), ("invoice.paid", "all"), ("invoice.paid", "prefix"),
        ("invoice.paid.late", "all"), ("invoice.paid.late", "prefix"),
        ("invoices.sent", "all")])
    for bad in (["inv*"], ["*.paid"], ["a.*.b"]):
        assert api.code(CREATE_CONFIG, {"input": {"endpoint": "https://e.com/c",
                                                  "eventTypes": bad}}) == "BAD_USER_INPUT"


def test_a_strict_catalog_refuses_unknown_types_naming_the_close_ones(settings, pool,
                                                                      telemetry):
    from service.web.app import create_app

    app = create_app(settings.replace(event_types="strict"), pool=pool, telemetry=telemetry)
    strict = Api(app.test_client(), tokens.create(pool, name="ops", role="operator",
                                                  tenant_id=None)[1])
    strict.data(CREATE, {"input": {"name": "invoice.paid"}})
    error = strict.error(PUBLISH, {"input": {"type": "invoice.payed", "payload": {}}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "'invoice.paid'" in error["message"]  # the close name
    assert "errors" not in publish(strict, "invoice.paid", {})
    config = {"endpoint": "https://e.com/x"}
    assert "'invoice.paid'" in strict.error(CREATE_CONFIG, {"input": {
        **config, "eventTypes": ["invoice.payed"]}})["message"]
    assert strict.code(CREATE_CONFIG, {"input": {**config, "eventTypes": ["order.*"]}}) \
        == "BAD_USER_INPUT"
    for fine in (["invoice.paid"], ["invoice.*"], ["*"]):
        strict.data(CREATE_CONFIG, {"input": {**config, "eventTypes": fine}})

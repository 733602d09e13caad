"""No request can make the API answer 500 or leak internals; limits keep requests cheap."""

from __future__ import annotations

import logging
import time

import pytest
from graphql import build_schema, get_introspection_query, parse, validate
from hypothesis import given, settings
from hypothesis import strategies as st

from db import inspection
from db.errors import DatabaseUnavailable
from db.pool import ConnectionPool
from graphql_schema.limits import MAX_ALIASES, MAX_DEPTH, DocumentLimits
from service.local.ports import reserve_port
from service.web.app import create_app
from tests.api.conftest import Api
from tests.helpers import PATIENCE

STATS = "{ stats { queueDepth } }"


@pytest.mark.parametrize("query", [
    "{", "{ nope }", "query { deliveries(first: \"ten\") { pageInfo { hasNextPage } } }",
    "mutation { nope }", "{ delivery { id } }", "subscription { x }", "{ stats }",
    "{ stats { queueDepth } } fragment F on Query { ...F }",
])
def test_malformed_documents_are_bad_input(shared_api, query):
    assert shared_api.code(query) == "BAD_USER_INPUT"


@pytest.mark.parametrize(("query", "variables"), [
    ("query ($id: ID!) { delivery(id: $id) { id } }", {}),
    ("query ($id: ID!) { delivery(id: $id) { id } }", {"id": {"a": 1}}),
    ("query ($id: ID!) { delivery(id: $id) { id } }", {"id": [1]}),
    ("query ($id: ID!) { delivery(id: $id) { id } }", {"id": 1.5}),
    ("query ($f: Int) { deliveries(first: $f) { edges { cursor } } }", {"f": "5"}),
    ("query ($f: DeliveryFilter) { deliveries(filter: $f) { edges { cursor } } }",
     {"f": {"nope": 1}}),
    ("query ($f: DeliveryFilter) { deliveries(filter: $f) { edges { cursor } } }",
     {"f": "text"}),
])
def test_wrongly_typed_variables_are_bad_input(shared_api, query, variables):
    assert shared_api.code(query, variables) == "BAD_USER_INPUT"


@pytest.mark.parametrize(("body", "content_type"), [
    ("not json", "application/json"),
    ('{"query": 5}', "application/json"),
    ('{"query": "{ stats { queueDepth } }", "variables": [1]}', "application/json"),
    ('[{"query": "{ stats { queueDepth } }"}]', "application/json"),
    ("query=x", "text/plain"),
    ("{}", "application/json"),
    ("5", "application/json"),
    ("null", "application/json"),
    ('"text"', "application/json"),
    ("[" * 100_000, "application/json"),
    ('{"query": "{ stats { queueDepth } }", "variables": {"v": ' + "[" * 200 + "]" * 200 + "}}",
     "application/json"),
])
def test_malformed_http_requests_get_a_coded_error_not_a_500(shared_api, body, content_type):
    response = shared_api.client.post("/graphql", data=body, content_type=content_type,
                                      headers={"Authorization": f"Bearer {shared_api.token}"})
    assert 400 <= response.status_code < 500
    assert response.get_json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_json_with_raw_newlines_in_strings_is_accepted_as_curl_sends_it(shared_api):
    body = '{"query": "{ stats {\n queueDepth } }"}'
    response = shared_api.client.post("/graphql", data=body, content_type="application/json",
                                      headers={"Authorization": f"Bearer {shared_api.token}"})
    assert response.get_json() == {"data": {"stats": {"queueDepth": 0}}}


def test_a_deeply_nested_payload_is_refused_and_a_nested_one_accepted(api, make):
    make.config()
    publish = "mutation ($p: JSON!) { publishEvent(input: {type: \"t\", payload: $p}) { eventId } }"
    nested = []
    for _ in range(120):
        nested = [nested]
    assert api.data(publish, {"p": nested})["publishEvent"]["eventId"]
    for _ in range(10):
        nested = [nested]
    error = api.error(publish, {"p": nested})
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "128" in error["message"]
    deep_variables = "query ($v: [[[DeliveryStatus!]]]) { stats { queueDepth } }"
    assert api.code(deep_variables, {"v": [[["LOST"]]]}) == "BAD_USER_INPUT"


@pytest.mark.parametrize("query", [
    "query ($v: String) { deliveries(filter: {eventType: $v}) { edges { cursor } } }",
    "query ($v: ID!) { config(id: $v) { id } }",
    "mutation ($v: String) { createConfig(input: {endpoint: \"https://e.com\", "
    "eventTypes: [\"a\"], name: $v}) { secret } }",
    "mutation ($v: String!) { createConfig(input: {endpoint: \"https://e.com\", "
    "eventTypes: [$v]}) { secret } }",
    "mutation ($v: String!) { publishEvent(input: {type: $v, payload: 1}) { eventId } }",
    "mutation ($v: ID!) { deleteConfig(id: $v) { cancelledDeliveries } }",
])
def test_lone_surrogates_are_bad_input(shared_api, query):
    assert shared_api.code(query, {"v": "a\ud800b"}) == "BAD_USER_INPUT"


def test_other_methods_are_refused(client, operator_token):
    response = client.put("/graphql", json={"query": STATS},
                          headers={"Authorization": f"Bearer {operator_token}"})
    assert response.status_code == 405


def test_too_many_aliases_are_refused(shared_api):
    many = " ".join(f"a{i}: stats {{ queueDepth }}" for i in range(MAX_ALIASES + 1))
    error = shared_api.error(f"{{ {many} }}")
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "aliases" in error["message"]
    few = " ".join(f"a{i}: stats {{ queueDepth }}" for i in range(MAX_ALIASES))
    assert len(shared_api.data(f"{{ {few} }}")) == MAX_ALIASES


def test_a_fragment_bomb_is_refused_quickly(shared_api):
    fragments = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}"
                         for i in range(60))
    started = time.monotonic()
    error = shared_api.error(f"{{ ...F0 }} {fragments} fragment F60 on Query {{ a: stats "
                      "{ queueDepth } }")
    # Expanded, the document would select 2**60 fields: refused at all means refused early.
    assert time.monotonic() - started < PATIENCE
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_huge_document_is_refused(shared_api):
    query = "{ stats { " + "queueDepth " * 20_000 + "} }"
    assert shared_api.code(query) == "BAD_USER_INPUT"


def test_the_standard_introspection_query_works_and_cycles_are_refused(shared_api):
    assert shared_api.data(get_introspection_query(descriptions=True))["__schema"]["types"]
    cycle = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }"
    assert shared_api.code(cycle) == "BAD_USER_INPUT"


RECURSIVE = build_schema("type Query { me: User } type User { friend: User name: String }")


def _nested(depth: int) -> str:
    return "{ " + "me { " + "friend { " * (depth - 2) + "name" + " }" * (depth - 1) + " }"


def test_the_depth_limit_counts_nested_fields():
    assert validate(RECURSIVE, parse(_nested(MAX_DEPTH)), [DocumentLimits]) == []
    (error,) = validate(RECURSIVE, parse(_nested(MAX_DEPTH + 1)), [DocumentLimits])
    assert f"maximum is {MAX_DEPTH}" in error.message
    through_fragments = ("{ me { ...A } } fragment A on User { friend { ...B } } "
                         "fragment B on User { friend { friend { friend { friend { friend "
                         "{ friend { friend { friend { name } } } } } } } } }")
    assert len(validate(RECURSIVE, parse(through_fragments), [DocumentLimits])) == 1


def test_an_unreachable_database_is_unavailable_not_a_crash(settings, telemetry):
    down = ConnectionPool(f"postgresql://postgres@127.0.0.1:{reserve_port()}/none", size=2)
    client = create_app(settings, pool=down, telemetry=telemetry).test_client()
    response = client.post("/graphql", json={"query": STATS},
                           headers={"Authorization": "Bearer whk_anything"})
    assert response.status_code == 503
    assert response.get_json()["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 503


def test_a_database_outage_inside_a_resolver_is_unavailable(api, monkeypatch):
    def outage(*args, **kwargs):
        raise DatabaseUnavailable("server closed the connection unexpectedly")

    monkeypatch.setattr(inspection, "stats", outage)
    error = api.error(STATS)
    assert error["extensions"]["code"] == "UNAVAILABLE"
    assert "server closed" not in error["message"]


def test_an_unexpected_error_is_masked_and_logged(api, monkeypatch, caplog):
    def bug(*args, **kwargs):
        raise RuntimeError("internal detail: /srv/secret/path")

    monkeypatch.setattr(inspection, "stats", bug)
    with caplog.at_level(logging.ERROR, logger="webhooks.api"):
        response = api.post(STATS)
    assert response.status_code == 200
    error = response.get_json()["errors"][0]
    assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    assert "secret" not in response.get_data(as_text=True)
    assert "internal detail" in caplog.text


def test_expected_errors_are_not_logged_as_faults(shared_api, caplog):
    with caplog.at_level(logging.WARNING, logger="webhooks.api"):
        shared_api.code('{ delivery(id: "x") { id } deliveries(first: 0) { edges { cursor } } }')
    assert caplog.text == ""


_text = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("\x00\ud800\udfff"),
                max_size=40)
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | _text,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_text, inner, max_size=3), max_leaves=6)


_header = st.text(alphabet=st.characters(codec="latin-1", exclude_characters="\r\n"),
                 max_size=300)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(id=_json, after=_json, first=_json, config_id=_json, created=_json, key=_header)
def test_no_variables_make_a_500(shared_api, id, after, first, config_id, created, key):
    query = """query ($id: ID!, $after: String, $first: Int, $f: DeliveryFilter) {
      delivery(id: $id) { id attempts { id } }
      deliveries(first: $first, after: $after, filter: $f) { edges { cursor } }
      configs(after: $after, first: $first) { edges { cursor } }
      config(id: $id) { id }
      rejectedEvents(after: $after) { edges { cursor } } }"""
    variables = {"id": id, "after": after, "first": first,
                 "f": {"configId": config_id, "createdAfter": created, "eventId": config_id}}
    for operation, sent in ((query, variables),
                            ("mutation ($id: ID!) { replayDelivery(id: $id) { action } "
                             "deactivateConfig(id: $id) { cancelledDeliveries } }",
                             {"id": id})):
        response = shared_api.post(operation, sent, headers={"Idempotency-Key": key})
        assert response.status_code < 500, response.data
        for error in response.get_json().get("errors", []):
            assert error["extensions"]["code"] != "INTERNAL_SERVER_ERROR", error


def test_a_viewer_token_is_not_logged(client, viewer_token, caplog):
    with caplog.at_level(logging.DEBUG):
        Api(client, viewer_token).data(STATS)
    assert viewer_token not in caplog.text


_url = st.one_of(_text, st.builds("http://{}/{}".format, _text, _text),
                 st.builds("https://{}".format, _text))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(endpoint=_url, types=st.lists(_text, max_size=3), name=st.none() | _text,
       secret=st.none() | _text, payload=_json, text=_text, event_id=st.none() | _text)
def test_no_mutation_input_makes_a_500(shared_api, endpoint, types, name, secret, payload,
                                       text, event_id):
    for operation, variables in (
        ("mutation ($i: CreateConfigInput!) { createConfig(input: $i) { secret } }",
         {"i": {"endpoint": endpoint, "eventTypes": types, "name": name, "secret": secret}}),
        ("mutation ($i: PublishEventInput!) { publishEvent(input: $i) { eventId } }",
         {"i": {"type": text, "payload": payload, "id": event_id}}),
        ("mutation ($id: ID!, $i: UpdateConfigInput!) { updateConfig(id: $id, input: $i) "
         "{ id } }", {"id": text, "i": {"endpoint": endpoint, "eventTypes": types}}),
        ("mutation ($id: ID!, $s: String) { rotateConfigSecret(id: $id, secret: $s) "
         "{ secret } }", {"id": text, "s": secret}),
    ):
        response = shared_api.post(operation, variables)
        assert response.status_code < 500, response.data
        for error in response.get_json().get("errors", []):
            assert error["extensions"]["code"] != "INTERNAL_SERVER_ERROR", error

"""Every mutation leaves one audit line: who, what, which ids, the result; never a secret."""

import io
import json

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLScalarType,
    build_schema,
    get_named_type,
    get_nullable_type,
    is_required_argument,
    is_required_input_field,
)

from db import tokens
from graphql_schema.schema import mutations, sdl
from service.runtime.logs import configure

CREATE = ('mutation ($s: String) { createConfig(input: {endpoint: "http://127.0.0.1:9/hook", '
          'eventTypes: ["a"], secret: $s}) { config { id } secret } }')
ROTATE = 'mutation ($id: ID!) { rotateConfigSecret(id: $id) { secret } }'
DEACTIVATE = 'mutation ($id: ID!) { deactivateConfig(id: $id) { cancelledDeliveries } }'
PUBLISH = 'mutation { publishEvent(input: {type: "a", payload: {}, id: "evt-audit"}) ' \
          '{ eventId deliveryIds } }'
REPLAY = 'mutation ($id: ID!) { replayDelivery(id: $id) { action } }'


@pytest.fixture
def audit_lines():
    stream = io.StringIO()
    configure("info", stream=stream)

    def lines():
        parsed = [json.loads(line) for line in stream.getvalue().splitlines() if line]
        return [line for line in parsed if line["logger"] == "webhooks.audit"], stream

    yield lines
    configure("warning")


def test_each_mutation_is_audited_with_who_what_ids_and_result(api, viewer, operator_token,
                                                               audit_lines):
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtMTIzNA=="
    created = api.data(CREATE, {"s": secret})["createConfig"]
    config_id = created["config"]["id"]
    rotated = api.data(ROTATE, {"id": config_id})["rotateConfigSecret"]["secret"]
    published = api.data(PUBLISH)["publishEvent"]
    api.error(REPLAY, {"id": "999999"}, headers={"Idempotency-Key": "k1"})
    viewer.error(DEACTIVATE, {"id": config_id})
    api.data(DEACTIVATE, {"id": config_id})

    lines, stream = audit_lines()
    summary = [(line["audit"], line["actor"], line["role"], line["result"]) for line in lines]
    assert summary == [
        ("createConfig", "ops", "operator", "ok"),
        ("rotateConfigSecret", "ops", "operator", "ok"),
        ("publishEvent", "ops", "operator", "ok"),
        ("replayDelivery", "ops", "operator", "NOT_FOUND"),
        ("deactivateConfig", "dashboard", "viewer", "FORBIDDEN"),
        ("deactivateConfig", "ops", "operator", "ok"),
    ]
    assert lines[0]["ids"] == {"config_id": config_id}
    assert lines[1]["ids"] == {"id": config_id, "config_id": config_id}
    assert lines[2]["ids"] == {"event_id": "evt-audit",
                               "delivery_ids": published["deliveryIds"],
                               "delivery_count": len(published["deliveryIds"])}
    assert lines[3]["ids"] == {"id": "999999"}
    assert lines[4]["ids"] == {"id": config_id}
    text = stream.getvalue()
    for secret_text in (secret, created["secret"], rotated, operator_token):
        assert secret_text.split("_", 1)[1] not in text


def test_configs_created_at_once_are_audited_by_their_ids_and_count(api, audit_lines):
    inputs = [{"endpoint": "https://example.com/hook", "eventTypes": ["a"]}] * 3
    created = api.data("mutation ($inputs: [CreateConfigInput!]!) { createConfigs("
                       "inputs: $inputs) { secret config { id } } }",
                       {"inputs": inputs})["createConfigs"]
    lines, stream = audit_lines()
    assert [(line["audit"], line["result"]) for line in lines] == [("createConfigs", "ok")]
    assert lines[0]["ids"] == {"config_ids": [c["config"]["id"] for c in created],
                               "config_count": 3}
    for each in created:
        assert each["secret"].split("_", 1)[1] not in stream.getvalue()


def test_tenants_created_at_once_are_audited_by_their_uids_and_count(api, audit_lines):
    api.data("mutation { createTenants(inputs: [{uid: \"t1\"}, {uid: \"t2\"}]) { uid } }")
    lines, _ = audit_lines()
    assert [(line["audit"], line["result"]) for line in lines] == [("createTenants", "ok")]
    assert lines[0]["ids"] == {"tenant_uids": ["t1", "t2"], "tenant_count": 2}


def test_a_mutation_refused_for_want_of_a_valid_token_is_audited(api, pool, audit_lines):
    _, revoked = tokens.create(pool, name="former", tenant_id=None, role="operator")
    tokens.revoke(pool, "former")
    two = ('mutation Two { publishEvent(input: {type: "a", payload: {}}) { eventId } '
           '...More } fragment More on Mutation { replayDelivery(id: "1") { action } }')
    for token in (None, "whk_wrong", revoked):
        assert api.code(PUBLISH, token=token) == "UNAUTHENTICATED"
    assert api.code(two, token=None) == "UNAUTHENTICATED"
    assert api.code("{ stats { queueDepth } }", token=None) == "UNAUTHENTICATED"
    response = api.client.post("/graphql", json={"query": "query Q { stats { queueDepth } } "
                                                          + two, "operationName": "Q"})
    assert response.status_code == 401  # a query, though the document holds mutations too

    lines, stream = audit_lines()
    summary = [(line["audit"], line["actor"], line["role"], line["ids"], line["result"])
               for line in lines]
    assert summary == [("publishEvent", None, None, {}, "UNAUTHENTICATED")] * 4 + [
        ("replayDelivery", None, None, {}, "UNAUTHENTICATED")]
    assert revoked.split("_", 1)[1] not in stream.getvalue()


def _sample(kind: GraphQLInputType) -> object:
    """Return a value of `kind` that its coercion accepts (required input fields only)."""
    kind = get_nullable_type(kind)
    if isinstance(kind, GraphQLList):
        return [_sample(kind.of_type)]
    if isinstance(kind, GraphQLInputObjectType):
        return {name: _sample(field.type) for name, field in kind.fields.items()
                if is_required_input_field(field)}
    if isinstance(kind, GraphQLEnumType):
        return next(iter(kind.values))
    return SCALAR_SAMPLES[kind.name]


SCALAR_SAMPLES = {"String": "x", "ID": "1", "Int": 1, "Float": 1.0, "Boolean": False,
                  "JSON": {}, "DateTime": "2024-01-01T00:00:00Z"}
MUTATION_TYPE = build_schema(sdl()).mutation_type


def _call(name: str) -> tuple[str, dict]:
    """Return a document calling mutation `name` with its required arguments, and their values."""
    required = {arg: spec for arg, spec in MUTATION_TYPE.fields[name].args.items()
                if is_required_argument(spec)}
    declared = ", ".join(f"${arg}: {spec.type}" for arg, spec in required.items())
    passed = ", ".join(f"{arg}: ${arg}" for arg in required)
    returned = get_named_type(MUTATION_TYPE.fields[name].type)
    selection = "" if isinstance(returned, GraphQLScalarType) else " { __typename }"
    document = (f"mutation{f' ({declared})' if declared else ''} "
                f"{{ {name}{f'({passed})' if passed else ''}{selection} }}")
    return document, {arg: _sample(spec.type) for arg, spec in required.items()}


@pytest.mark.parametrize("mutation", mutations())
def test_every_mutation_of_the_schema_is_audited_whoever_calls_it(mutation, api, viewer,
                                                                  audit_lines):
    document, variables = _call(mutation)
    headers = {"Idempotency-Key": f"audit-{mutation}"}
    api.post(document, variables, headers=headers)  # whatever its outcome: ok or a code
    assert viewer.code(document, variables, headers=headers) == "FORBIDDEN"
    assert api.code(document, variables, headers=headers, token=None) == "UNAUTHENTICATED"

    lines, _ = audit_lines()
    assert [(line["audit"], line["actor"], line["role"]) for line in lines] == [
        (mutation, "ops", "operator"), (mutation, "dashboard", "viewer"),
        (mutation, None, None)]
    assert [line["result"] for line in lines[1:]] == ["FORBIDDEN", "UNAUTHENTICATED"]

"""Access control: bearer tokens with viewer and operator roles."""

from __future__ import annotations

import pytest

from db import tokens

STATS = "{ stats { queueDepth } }"
CREATE = """mutation { createConfig(input: {endpoint: "https://example.com/hook",
                                             eventTypes: ["a"]}) { secret } }"""


def test_a_query_without_a_token_is_unauthenticated_and_shows_no_data(client, api, make):
    make.config()
    response = api.post("{ configs { edges { node { id endpoint } } } }", token=None)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    body = response.get_json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("authorization", [
    "Bearer whk_not-a-real-token", "Bearer ", "Basic dXNlcjpwYXNz", "whk_x", "Bearer\x7f",
])
def test_unknown_or_malformed_credentials_are_unauthenticated(shared_api, authorization):
    response = shared_api.client.post("/graphql", json={"query": STATS},
                                      headers={"Authorization": authorization})
    assert response.status_code == 401
    assert response.get_json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def test_a_revoked_token_is_unauthenticated(api, pool, operator_token):
    assert api.data(STATS)["stats"]["queueDepth"] == 0
    tokens.revoke(pool, "ops")
    assert api.code(STATS) == "UNAUTHENTICATED"


def test_a_mutation_without_a_token_is_unauthenticated_and_changes_nothing(api, make):
    assert api.code(CREATE, token=None) == "UNAUTHENTICATED"
    assert make.count("SELECT count(*) FROM configs") == 0


def test_a_viewer_may_query_but_not_mutate(viewer, make):
    assert viewer.data(STATS) == {"stats": {"queueDepth": 0}}
    error = viewer.error(CREATE)
    assert error["extensions"]["code"] == "FORBIDDEN"
    assert "operator" in error["message"]
    assert make.count("SELECT count(*) FROM configs") == 0


def test_every_mutation_is_forbidden_to_a_viewer(viewer, make):
    config = make.config()
    delivery_id = make.delivery(config)
    arguments = {
        "createConfig": '(input: {endpoint: "https://e.com", eventTypes: ["a"]}) { secret }',
        "updateConfig": f'(id: "{config.id}", input: {{name: "x"}}) {{ id }}',
        "activateConfig": f'(id: "{config.id}") {{ id }}',
        "deactivateConfig": f'(id: "{config.id}") {{ cancelledDeliveries }}',
        "deleteConfig": f'(id: "{config.id}") {{ cancelledDeliveries }}',
        "rotateConfigSecret": f'(id: "{config.id}") {{ secret }}',
        "publishEvent": '(input: {type: "order.created", payload: {}}) { eventId }',
        "replayDelivery": f'(id: "{delivery_id}") {{ action }}',
        "skipDelivery": f'(id: "{delivery_id}") {{ sequence }}',
        "replayDeliveries": '(filter: {createdAtFrom: "2020-01-01T00:00:00Z"}) { hasMore }',
        "pauseConfig": f'(id: "{config.id}") {{ changed }}',
        "resumeConfig": f'(id: "{config.id}") {{ changed }}',
        "resetCircuit": f'(id: "{config.id}") {{ changed }}',
        "createConfigs": '(inputs: [{endpoint: "https://e.com", eventTypes: ["a"]}]) { secret }',
        "createTenant": '(input: {uid: "t"}) { uid }',
        "createTenants": '(inputs: [{uid: "t"}]) { uid }',
        "updateTenant": '(uid: "default", input: {name: "x"}) { uid }',
        "deleteTenant": '(uid: "default") { configsStopped }',
        "createApiToken": '(name: "n", role: OPERATOR) { token }',
        "revokeApiToken": '(name: "n") { name }',
        "replayRejectedEvent": '(id: "1") { replayed { eventId } }',
        "replayRejectedEvents": '(tenant: "t") { replayed { eventId } }',
        "createEventType": '(input: {name: "t.x"}) { name }',
        "updateEventType": '(name: "t.x", input: {description: "d"}) { name }',
        "deprecateEventType": '(name: "t.x", reason: "r") { name }',
        "createPortalSession": '(tenant: "default") { token }',
        "revokePortalSessions": '(tenant: "default")',
    }
    mutations = viewer.data('{ __type(name: "Mutation") { fields { name } } }')
    assert set(arguments) == {field["name"] for field in mutations["__type"]["fields"]}
    for name, rest in arguments.items():
        assert viewer.code(f"mutation {{ {name}{rest} }}",
                           headers={"Idempotency-Key": "k"}) == "FORBIDDEN", name
    assert make.row(delivery_id)["status"] == "pending"
    assert make.count("SELECT count(*) FROM configs WHERE active AND deleted_at IS NULL") == 1


def test_graphiql_is_served_without_a_token(client):
    response = client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert b"graphiql" in response.data.lower()


def test_a_query_by_get_needs_a_token_too(client, operator_token):
    response = client.get("/graphql", query_string={"query": STATS})
    assert response.status_code == 401
    response = client.get("/graphql", query_string={"query": STATS},
                          headers={"Authorization": f"Bearer {operator_token}"})
    assert response.get_json() == {"data": {"stats": {"queueDepth": 0}}}


def test_a_mutation_by_get_is_refused(client, operator_token):
    response = client.get("/graphql", query_string={"query": CREATE},
                          headers={"Authorization": f"Bearer {operator_token}"})
    assert response.status_code in (400, 405)
    assert response.get_json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"

"""Endpoint health through the API: Config.health, pause, resume, resetCircuit, limits."""

from __future__ import annotations

import pytest

from db import deliveries
from tests.api.test_configs import create
from tests.endpoint_health import RULES, open_circuit

HEALTH = "health { state consecutiveFailures openedAt nextProbeAt lastFailure pausedAt reason }"
CHANGE_FIELDS = f"changed message config {{ id maxInFlight ratePerSecond {HEALTH} }}"
PAUSE = f"mutation ($id: ID!) {{ pauseConfig(id: $id) {{ {CHANGE_FIELDS} }} }}"
RESUME = f"mutation ($id: ID!) {{ resumeConfig(id: $id) {{ {CHANGE_FIELDS} }} }}"
RESET = f"mutation ($id: ID!) {{ resetCircuit(id: $id) {{ {CHANGE_FIELDS} }} }}"
BY_HEALTH = f"""
query ($health: HealthState) {{
  configs(health: $health) {{ edges {{ node {{ id {HEALTH} }} }} }}
}}"""
UPDATE = """
mutation ($id: ID!, $input: UpdateConfigInput!) {
  updateConfig(id: $id, input: $input) { id maxInFlight ratePerSecond }
}"""


def test_a_new_config_is_healthy(api):
    config = create(api)["config"]
    node = api.data(f'{{ config(id: "{config["id"]}") {{ {HEALTH} }} }}')["config"]
    assert node["health"] == {"state": "HEALTHY", "consecutiveFailures": 0, "openedAt": None,
                              "nextProbeAt": None, "lastFailure": None, "pausedAt": None,
                              "reason": None}


def test_pausing_twice_is_a_no_op_that_says_so_and_resume_undoes_it(api):
    config = create(api)["config"]
    paused = api.data(PAUSE, {"id": config["id"]})["pauseConfig"]
    assert paused["changed"] is True and paused["message"] == "config paused"
    assert paused["config"]["health"]["state"] == "PAUSED"
    assert paused["config"]["health"]["pausedAt"] is not None
    again = api.data(PAUSE, {"id": config["id"]})["pauseConfig"]
    assert again["changed"] is False
    assert again["message"] == "config was already paused; nothing changed"
    resumed = api.data(RESUME, {"id": config["id"]})["resumeConfig"]
    assert resumed["changed"] is True and resumed["config"]["health"]["state"] == "HEALTHY"
    assert api.data(RESUME, {"id": config["id"]})["resumeConfig"]["changed"] is False


def test_the_health_filter_lists_configs_in_one_state(api):
    paused = create(api)["config"]["id"]
    healthy = create(api)["config"]["id"]
    api.data(PAUSE, {"id": paused})
    ids = lambda state: [e["node"]["id"] for e in  # noqa: E731
                         api.data(BY_HEALTH, {"health": state})["configs"]["edges"]]
    assert ids("PAUSED") == [paused]
    assert ids("HEALTHY") == [healthy]
    assert ids("OPEN") == []
    assert sorted(ids(None)) == sorted([paused, healthy])


def test_reset_circuit_closes_an_open_circuit(api, make, telemetry):
    config = make.config()
    for _ in range(5):
        make.event()
    open_circuit(make, config)
    opened = api.data(f'{{ config(id: "{config.id}") {{ {HEALTH} }} }}')["config"]["health"]
    assert opened["state"] == "OPEN" and opened["consecutiveFailures"] == 3
    assert opened["lastFailure"] == "HTTP 503" and opened["nextProbeAt"] is not None
    reset = api.data(RESET, {"id": config.id})["resetCircuit"]
    assert reset["changed"] is True and reset["config"]["health"]["state"] == "HEALTHY"
    assert api.data(RESET, {"id": config.id})["resetCircuit"]["changed"] is False
    assert deliveries.claim_due(make.pool, owner="w", limit=10, rules=RULES)
    assert b'webhooks_circuit_transitions_total{from="open",to="closed"} 1.0' \
        in telemetry.prometheus_text()


def test_caps_and_rates_are_set_on_create_and_update_and_cleared_with_null(api):
    config = create(api, maxInFlight=3, ratePerSecond=2.5)["config"]
    assert api.data(UPDATE, {"id": config["id"], "input": {"name": "x"}})["updateConfig"] \
        == {"id": config["id"], "maxInFlight": 3, "ratePerSecond": 2.5}
    cleared = api.data(UPDATE, {"id": config["id"],
                                "input": {"maxInFlight": None, "ratePerSecond": None}})
    assert cleared["updateConfig"] == {"id": config["id"], "maxInFlight": None,
                                       "ratePerSecond": None}


@pytest.mark.parametrize("field, value", [
    ("maxInFlight", 0), ("maxInFlight", -1), ("maxInFlight", 1_000_000),
    ("ratePerSecond", 0), ("ratePerSecond", -2.5), ("ratePerSecond", 1e12),
])
def test_absurd_caps_and_rates_are_bad_user_input_naming_the_field(api, field, value):
    config = create(api)["config"]
    for error in (
        api.error(UPDATE, {"id": config["id"], "input": {field: value}}),
        api.error("mutation ($input: CreateConfigInput!) { createConfig(input: $input) "
                  "{ secret } }", {"input": {"endpoint": "https://example.com/h",
                                             "eventTypes": ["a"], field: value}}),
    ):
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert error["message"].startswith(f"{field}:")


def test_health_mutations_of_unknown_configs_are_not_found(api):
    for mutation in (PAUSE, RESUME, RESET):
        assert api.code(mutation, {"id": "no-such-config"}) == "NOT_FOUND"


def test_a_viewer_may_read_health_but_not_pause(api, viewer_token):
    config = create(api)["config"]
    assert api.code(PAUSE, {"id": config["id"]}, token=viewer_token) == "FORBIDDEN"
    assert api.data(f'{{ config(id: "{config["id"]}") {{ {HEALTH} }} }}',
                    token=viewer_token)["config"]["health"]["state"] == "HEALTHY"

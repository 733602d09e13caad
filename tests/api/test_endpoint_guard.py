"""createConfig and updateConfig refuse endpoints the send-time SSRF guard would block."""

import pytest

from service.web.app import create_app
from tests.api.conftest import Api

CREATE = ('mutation ($e: String!) { createConfig(input: {endpoint: $e, eventTypes: ["a"]}) '
          '{ config { id endpoint } } }')
UPDATE = 'mutation ($id: ID!, $e: String!) { updateConfig(id: $id, input: {endpoint: $e}) { id } }'
PUBLIC = "http://93.184.216.34/hook"


@pytest.fixture
def guarded(settings, pool, telemetry, operator_token) -> Api:
    """An operator client of an app that does not allow private endpoints."""
    app = create_app(settings.replace(allow_private_endpoints=False), pool=pool,
                     telemetry=telemetry)
    return Api(app.test_client(), operator_token)


@pytest.mark.parametrize(
    ("endpoint", "reason"),
    [
        ("http://127.0.0.1:9/hook", "loopback"),
        ("http://localhost:8080/hook", "loopback"),
        ("https://[::1]/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://192.168.0.10/hook", "private"),
        ("http://169.254.169.254/latest/meta-data", "cloud metadata"),
        ("http://0x7f000001/hook", "loopback"),
        ("http://[::ffff:10.0.0.1]/hook", "IPv4-mapped private"),
    ],
)
def test_create_refuses_an_endpoint_the_guard_would_block(guarded, endpoint, reason):
    error = guarded.error(CREATE, {"e": endpoint})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith("endpoint: ")
    assert f"({reason})" in error["message"]
    assert "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS" in error["message"]


def test_update_refuses_it_too_and_keeps_the_endpoint(guarded):
    config = guarded.data(CREATE, {"e": PUBLIC})["createConfig"]["config"]
    error = guarded.error(UPDATE, {"id": config["id"], "e": "http://127.0.0.1/hook"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "loopback" in error["message"]
    query = "query ($id: ID!) { config(id: $id) { endpoint } }"
    assert guarded.data(query, {"id": config["id"]})["config"]["endpoint"] == PUBLIC


@pytest.mark.parametrize("endpoint", [PUBLIC, "https://unresolvable.invalid/hook"])
def test_public_or_not_yet_resolvable_endpoints_are_accepted(guarded, endpoint):
    assert guarded.data(CREATE, {"e": endpoint})["createConfig"]["config"]["endpoint"] \
        == endpoint


def test_private_endpoints_are_accepted_when_allowed(api):
    created = api.data(CREATE, {"e": "http://127.0.0.1:9/hook"})["createConfig"]["config"]
    assert created["endpoint"] == "http://127.0.0.1:9/hook"

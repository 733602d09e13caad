"""Fixtures of the API tests: the app on the test database, tokens, and a GraphQL client."""

from __future__ import annotations

from typing import Any

import pytest

from db import tokens
from db.adhoc import dsn_for
from db.pool import ConnectionPool
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app


class Api:
    """POST GraphQL operations to /graphql through a Flask test client, with a token."""

    def __init__(self, client: Any, token: str | None) -> None:
        self.client = client
        self.token = token

    def post(self, query: str, variables: dict | None = None, *, token: str | None = "",
             headers: dict | None = None) -> Any:
        """Return the raw response; `token=""` means this client's token, None means none."""
        token = self.token if token == "" else token
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return self.client.post("/graphql", json={"query": query, "variables": variables or {}},
                                headers=sent)

    def data(self, query: str, variables: dict | None = None, **options: Any) -> dict:
        """Return the data of an operation that must succeed."""
        response = self.post(query, variables, **options)
        body = response.get_json()
        assert response.status_code == 200, body
        assert "errors" not in body, body["errors"]
        return body["data"]

    def error(self, query: str, variables: dict | None = None, **options: Any) -> dict:
        """Return the first error of an operation that must fail, with codes and no 500."""
        response = self.post(query, variables, **options)
        assert response.status_code < 500 or response.status_code == 503, response.data
        body = response.get_json()
        assert body is not None, response.data
        errors = body.get("errors")
        assert errors, body
        assert all("code" in error.get("extensions", {}) for error in errors), errors
        return errors[0]

    def code(self, query: str, variables: dict | None = None, **options: Any) -> str:
        """Return the code of the first error of an operation that must fail."""
        return self.error(query, variables, **options)["extensions"]["code"]


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry(role="web")


@pytest.fixture
def app(settings, pool, telemetry):
    return create_app(settings, pool=pool, telemetry=telemetry)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def operator_token(pool) -> str:
    return tokens.create(pool, name="ops", tenant_id=None, role="operator")[1]


@pytest.fixture
def viewer_token(pool) -> str:
    return tokens.create(pool, name="dashboard", tenant_id=None, role="viewer")[1]


@pytest.fixture
def api(client, operator_token) -> Api:
    """A client holding an operator token."""
    return Api(client, operator_token)


@pytest.fixture
def viewer(client, viewer_token) -> Api:
    """A client holding a viewer token."""
    return Api(client, viewer_token)


@pytest.fixture(scope="module")
def shared_api(server_dsn, database_factory, template_database):
    """An operator client on one database for a whole module, for many cases of bad input.

    A fresh database per test costs about 0.3 s here. Use it only for requests that change
    nothing, or whose changes no other test of the module looks at.
    """
    pool = ConnectionPool(dsn_for(server_dsn, database_factory(template=template_database)))
    settings = Settings.load({}, {"database_url": pool.dsn})
    app = create_app(settings, pool=pool, telemetry=Telemetry(role="web"))
    yield Api(app.test_client(), tokens.create(pool, name="shared", tenant_id=None,
                                               role="operator")[1])
    pool.close()


def metric_value(telemetry: Telemetry, name: str, **labels: str) -> float:
    """Return the value of one sample of the Prometheus text, 0 when absent."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(telemetry.prometheus_text().decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0

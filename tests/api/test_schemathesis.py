"""Schemathesis fuzzes every query and mutation of /graphql: no 500, no schema violation, and
no data for anyone without a valid token."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from gevent.pywsgi import WSGIServer
from graphql.language import ast
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.specs.graphql.validation import is_schema_violation

from db import tokens
from db.adhoc import dsn_for
from db.pool import ConnectionPool
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.factories import Factories

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "graphql_schema" / "schema.graphql"
EXAMPLES = 15  # per operation and role; ~60 operations keep this near half a minute


@pytest.fixture(scope="module")
def fuzzed(server_dsn, database_factory, template_database):
    """One app on one database for the whole module, with data worth querying."""
    dsn = dsn_for(server_dsn, database_factory(template=template_database))
    pool = ConnectionPool(dsn, size=4)
    make = Factories(pool)
    config = make.config(endpoint="http://127.0.0.1:9/hook", event_types=["fuzz"])
    make.event(type="fuzz")
    make.delivery(config)
    app = create_app(Settings.load({}, {"database_url": dsn}), pool=pool,
                     telemetry=Telemetry(role="web"))
    app_tokens = {role: tokens.create(pool, name=role, tenant_id=None, role=role)[1]
                  for role in ("operator", "viewer")}
    server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None)
    server.start()  # cases go over real HTTP
    yield f"http://127.0.0.1:{server.server_port}/graphql", app_tokens
    server.stop()
    pool.close()


schema = schemathesis.graphql.from_file(SCHEMA_FILE.read_text())


FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])
# The API's error codes. The database is up throughout, so UNAVAILABLE (and its 503) would mean
# some input made a database call fail as if it were down: a defect, like a 500.
CODES = {"NOT_FOUND", "NOT_ELIGIBLE", "IDEMPOTENCY_CONFLICT", "BAD_USER_INPUT",
         "UNAUTHENTICATED", "FORBIDDEN"}
BAD_AUTHORIZATIONS = (None, "Bearer whk_not-a-real-token", "Basic eDp5", "Bearer ")


def _json_literals() -> st.SearchStrategy:
    """GraphQL literals for the JSON scalar: any nesting of objects, lists and scalars."""
    scalars = st.one_of(
        st.text(max_size=20).map(lambda v: ast.StringValueNode(value=v)),
        st.integers(-(2**31), 2**31 - 1).map(lambda v: ast.IntValueNode(value=str(v))),
        st.floats(allow_nan=False, allow_infinity=False).map(
            lambda v: ast.FloatValueNode(value=repr(v))),
        st.booleans().map(lambda v: ast.BooleanValueNode(value=v)),
        st.just(ast.NullValueNode()),
    )
    return st.recursive(scalars, lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda v: ast.ListValueNode(values=tuple(v))),
        st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
                        children, max_size=4).map(lambda d: ast.ObjectValueNode(fields=tuple(
                            ast.ObjectFieldNode(name=ast.NameNode(value=k), value=v)
                            for k, v in d.items()))),
    ), max_leaves=10)


schemathesis.graphql.scalar("JSON", _json_literals())


def _call(case, fuzzed, role):
    """Send one generated operation; check what the contract promises of every answer."""
    url, app_tokens = fuzzed
    response = case.call(base_url=url, headers={"Authorization": f"Bearer {app_tokens[role]}"})
    assert response.status_code < 500, response.text
    body = response.json()
    assert isinstance(body, dict) and ("data" in body or "errors" in body), body
    errors = body.get("errors") or []
    assert not is_schema_violation(errors), errors  # non-null fields that came back null
    for error in errors:
        assert error["extensions"]["code"] in CODES, error
    return body


@schema.parametrize()
@FUZZ
def test_operator_requests_never_make_a_500_or_break_the_schema(case, fuzzed):
    _call(case, fuzzed, "operator")


@schema.parametrize()
@FUZZ
def test_viewer_requests_never_make_a_500_and_never_mutate(case, fuzzed):
    body = _call(case, fuzzed, "viewer")
    if case.operation.label.startswith("Mutation."):
        # FORBIDDEN, unless the generated document is itself invalid (refused before it runs)
        codes = {e["extensions"]["code"] for e in body["errors"]}
        assert codes in ({"FORBIDDEN"}, {"BAD_USER_INPUT"}), body["errors"]
        assert not any((body.get("data") or {}).values()), body


@schema.parametrize()
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_without_a_valid_token_nothing_is_seen(case, fuzzed):
    for authorization in BAD_AUTHORIZATIONS:
        headers = {"Authorization": authorization} if authorization else {}
        response = case.call(base_url=fuzzed[0], headers=headers)
        assert response.status_code == 401, authorization
        body = response.json()
        assert body.get("data") is None
        assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAUTHENTICATED"]

"""`webhooks web`: the API under gunicorn's gevent worker, over real HTTP."""

from __future__ import annotations

import json
import signal

import gevent
import pytest
import requests

from db import tokens
from tests.helpers import PATIENCE, web_process


@pytest.fixture
def web(database_url):
    """Run `webhooks web` with one gevent worker on a free port; yield its base URL."""
    with web_process(database_url) as running:
        yield running


def test_webhooks_web_serves_the_api_through_gunicorns_gevent_worker(web, pool, make):
    url, process = web
    _, token = tokens.create(pool, name="web-test", tenant_id=None, role="operator")
    auth = {"Authorization": f"Bearer {token}"}
    config = make.config()
    delivery_id = make.delivery(config, status="failed", next_attempt_at=None)

    assert requests.get(f"{url}/readyz", timeout=PATIENCE).status_code == 200
    page = requests.get(f"{url}/graphql", headers={"Accept": "text/html"}, timeout=PATIENCE)
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    refused = requests.post(f"{url}/graphql", json={"query": "{ stats { queueDepth } }"},
                            timeout=PATIENCE)
    assert refused.status_code == 401
    assert refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    query = {"query": "{ configs { edges { node { id } } } stats { byStatus { status count } } }"}
    answer = requests.post(f"{url}/graphql", json=query, headers=auth, timeout=PATIENCE).json()
    assert answer["data"]["configs"]["edges"] == [{"node": {"id": config.id}}]

    replay = {"query": "mutation ($id: ID!) { replayDelivery(id: $id) { action } }",
              "variables": {"id": delivery_id}}
    jobs = [gevent.spawn(requests.post, f"{url}/graphql", json=replay, timeout=PATIENCE,
                         headers={**auth, "Idempotency-Key": "gunicorn"}) for _ in range(5)]
    gevent.joinall(jobs, raise_error=True)
    assert {job.value.status_code for job in jobs} == {200}
    assert [job.value.json() for job in jobs] == \
        [{"data": {"replayDelivery": {"action": "REPLAYED"}}}] * 5
    assert make.row(delivery_id)["replay_generation"] == 1

    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err
    assert token not in err


def _json_lines(text: str) -> list[dict]:
    """Return every line of `text` as JSON, failing on any line that is not an object."""
    lines = []
    for line in text.splitlines():
        if line.strip():
            try:
                lines.append(json.loads(line))
            except ValueError:
                raise AssertionError(f"not a JSON line: {line!r}") from None
    return lines


def test_webhooks_web_logs_json_lines_only_with_an_access_log_and_an_audit_trail(web, pool):
    url, process = web
    _, token = tokens.create(pool, name="deployer", tenant_id=None, role="operator")
    auth = {"Authorization": f"Bearer {token}"}
    create = {"query": "mutation { createConfig(input: {endpoint: \"https://example.com/h\", "
                       "eventTypes: [\"a\"]}) { config { id } secret } }"}
    created = requests.post(f"{url}/graphql", json=create, headers=auth, timeout=PATIENCE).json()
    config_id = created["data"]["createConfig"]["config"]["id"]
    secret = created["data"]["createConfig"]["secret"]
    assert requests.post(f"{url}/graphql", json={"query": "{ stats { queueDepth } }"},
                         headers={"Authorization": "Bearer whk_wrong"},
                         timeout=PATIENCE).status_code == 401
    metrics = requests.get(f"{url}/metrics", timeout=PATIENCE).text

    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err
    lines = _json_lines(out) + _json_lines(err)
    assert any(line["logger"].startswith("gunicorn.error") for line in lines), lines
    access = [line for line in lines if line["message"] == "access"]
    (mutation,) = [line for line in access
                   if line["method"] == "POST" and line.get("token_name") == "deployer"]
    assert (mutation["path"], mutation["status"]) == ("/graphql", 200)
    assert mutation["duration_ms"] >= 0
    refused = [line for line in access if line["status"] == 401]
    assert refused and refused[0]["token_name"] is None
    (audit,) = [line for line in lines if line["message"] == "audit"]
    assert audit["audit"] == "createConfig"
    assert (audit["actor"], audit["role"], audit["result"]) == ("deployer", "operator", "ok")
    assert audit["ids"]["config_id"] == config_id
    for text in (out, err):
        assert token not in text and secret not in text
        assert token.split("_", 1)[1] not in text and secret.split("_", 1)[1] not in text
    assert ('webhooks_api_requests_total{operation="createConfig",outcome="ok"} 1.0'
            in metrics)
    assert 'webhooks_api_requests_total{operation="none",outcome="client_error"} 1.0' in metrics
    assert 'webhooks_api_request_duration_seconds_count{operation="createConfig"} 1.0' in metrics
    assert 'webhooks_api_request_duration_seconds_count{operation="deliveries"} 0.0' in metrics
    assert 'webhooks_delivery_attempts_total{outcome="success",status_class="2xx"} 0.0' \
        in metrics

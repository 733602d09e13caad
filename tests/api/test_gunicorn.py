"""`webhooks web`: the API under gunicorn's gevent worker, over real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gevent
import pytest
import requests

from db import tokens
from service.local_postgres import free_port

ROOT = Path(__file__).resolve().parents[2]


def _wait_healthy(url: str, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"webhooks web exited with {process.returncode}")
        try:
            if requests.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError("webhooks web did not become healthy")


@pytest.fixture
def web(database_url):
    """Run `webhooks web` with one gevent worker on a free port; yield its base URL."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "WEB_CONCURRENCY": "1",
           "WEBHOOKS_METRICS_PORT": "0"}
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "web", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_webhooks_web_serves_the_api_through_gunicorns_gevent_worker(web, pool, make):
    url, process = web
    _, token = tokens.create(pool, name="web-test", role="operator")
    auth = {"Authorization": f"Bearer {token}"}
    config = make.config()
    delivery_id = make.delivery(config, status="failed", next_attempt_at=None)

    assert requests.get(f"{url}/readyz", timeout=5).status_code == 200
    page = requests.get(f"{url}/graphql", headers={"Accept": "text/html"}, timeout=5)
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    refused = requests.post(f"{url}/graphql", json={"query": "{ stats { queueDepth } }"},
                            timeout=5)
    assert refused.status_code == 401
    assert refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    query = {"query": "{ configs { edges { node { id } } } stats { byStatus { status count } } }"}
    answer = requests.post(f"{url}/graphql", json=query, headers=auth, timeout=5).json()
    assert answer["data"]["configs"]["edges"] == [{"node": {"id": config.id}}]

    replay = {"query": "mutation ($id: ID!) { replayDelivery(id: $id) { action } }",
              "variables": {"id": delivery_id}}
    jobs = [gevent.spawn(requests.post, f"{url}/graphql", json=replay, timeout=10,
                         headers={**auth, "Idempotency-Key": "gunicorn"}) for _ in range(5)]
    gevent.joinall(jobs, raise_error=True)
    assert {job.value.status_code for job in jobs} == {200}
    assert [job.value.json() for job in jobs] == \
        [{"data": {"replayDelivery": {"action": "REPLAYED"}}}] * 5
    assert make.row(delivery_id)["replay_generation"] == 1

    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert token not in err

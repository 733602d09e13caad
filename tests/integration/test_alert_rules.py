"""The alerting that ships in deploy/: Prometheus' own tool checks and unit-tests the rules on
synthetic series, checks both processes' real /metrics, and every metric the alerts and the
Grafana dashboard query is one the processes really export."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from db import health
from db.scope import PLATFORM
from service.local.ports import reserve_port
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.helpers import PATIENCE, wait_until

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "webhooks.json"
METRIC = re.compile(r"\bwebhooks_[a-z_]+\b")


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool not found; CI must run it (.ci/run installs prometheus)")
        pytest.skip("promtool not found (Debian's prometheus package)")
    return found


def run(promtool: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], input=stdin, capture_output=True, text=True,
                          cwd=RULES.parent, timeout=120)


def test_the_rules_are_valid_and_their_unit_tests_pass(promtool):
    checked = run(promtool, "check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = run(promtool, "test", "rules", "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


@pytest.fixture
def exported(make, start_worker, settings, pool) -> str:
    """The /metrics text of a real worker and of the web app, one after the other."""
    paused = make.config()
    make.event()
    health.pause(make.pool, PLATFORM, paused.id, reason="held, for the held gauge")
    port = reserve_port()
    running = start_worker(metrics_port=port, queue_metrics_period=0.1)
    # A worker without a broker never measures a Kafka partition: give its gauges a value,
    # so that the exporter shows their series as a consuming worker's does.
    running.telemetry.gauges.kafka_lag({("orders", 0): 5})
    running.telemetry.gauges.kafka_stalled([("orders", 1)])
    wanted = ("webhooks_retry_queue_depth", "webhooks_blocked_ordering_keys",
              "webhooks_suppressed_attempts{", "webhooks_kafka_consumer_lag{")
    worker = wait_until(lambda: (text := requests.get(f"http://127.0.0.1:{port}/metrics",
                                                      timeout=PATIENCE).text)
                        and all(name in text for name in wanted) and text)
    web = create_app(settings, pool=pool, telemetry=Telemetry(role="web")).test_client()
    return worker, web.get("/metrics").get_data(as_text=True)


def test_both_processes_metrics_pass_promtool_and_hold_what_alerts_and_dashboard_query(
        promtool, exported):
    worker, web = exported
    names = set()
    for text in (worker, web):
        checked = run(promtool, "check", "metrics", stdin=text)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        names |= {re.sub(r"_(bucket|sum|count|created)$", "", name)
                  for name in METRIC.findall(text)} | set(METRIC.findall(text))
    queried = set(METRIC.findall(RULES.read_text()))
    panels = json.loads(DASHBOARD.read_text())["panels"]
    dashboard = {name for panel in panels for target in panel["targets"]
                 for name in METRIC.findall(target["expr"])}
    assert queried and dashboard
    assert queried - names == set(), "alerts query metrics nobody exports"
    assert dashboard - names == set(), "the dashboard queries metrics nobody exports"

"""Pure endpoint-health policy: the breaker's verdict of each response, rules from settings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from db import health
from db.deliveries import Claimed
from db.vocabulary import AttemptOutcome, Verdict
from service.dispatch.circuit import NEVER, rules_from
from service.dispatch.sender import Response
from service.dispatch.verdict import judge
from service.policy.backoff import RetryPolicy
from service.runtime.settings import Settings, SettingsError

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CLAIMED = Claimed(
    id=1, event_id="e", event_type="t", payload="{}", occurred_at=NOW, config_id="c",
    config_active=True, endpoint="http://x", secret="s", previous_secrets=[], attempt_count=0,
    replay_generation=0, generation_started_at=NOW, last_backoff=None, claimed_at=NOW,
    webhook_id="msg_1", trace_parent=None, trace_state=None, token=uuid.uuid4())


@pytest.mark.parametrize("outcome, status_code, verdict", [
    ("success", 200, Verdict.SUCCESS),
    ("success", 204, Verdict.SUCCESS),
    ("http_error", 500, Verdict.FAILURE),
    ("http_error", 503, Verdict.FAILURE),
    ("http_error", 408, Verdict.FAILURE),
    ("http_error", 429, Verdict.FAILURE),
    ("timeout", 0, Verdict.FAILURE),
    ("network_error", 0, Verdict.FAILURE),
    ("http_error", 400, Verdict.NEUTRAL),
    ("http_error", 404, Verdict.NEUTRAL),
    ("http_error", 410, Verdict.NEUTRAL),
    ("http_error", 301, Verdict.NEUTRAL),
    (AttemptOutcome.BLOCKED, 0, Verdict.NEUTRAL),
])
def test_each_response_gives_the_breaker_its_verdict(outcome, status_code, verdict):
    response = Response(outcome=outcome, status_code=status_code, duration=0.01,
                        error=None if outcome == "success" else "x")
    policy = RetryPolicy.from_settings(Settings.load({}))
    assert judge(CLAIMED, response, policy, now=NOW).verdict == verdict


def test_the_default_cap_is_half_the_dispatch_concurrency_rounded_up():
    assert Settings.load({}).endpoint_cap == 25
    assert Settings.load({"WEBHOOKS_DISPATCH_CONCURRENCY": "1"}).endpoint_cap == 1
    assert Settings.load({"WEBHOOKS_DISPATCH_CONCURRENCY": "7"}).endpoint_cap == 4
    assert Settings.load({"WEBHOOKS_ENDPOINT_CONCURRENCY": "3"}).endpoint_cap == 3
    assert Settings.load({"WEBHOOKS_ENDPOINT_CONCURRENCY": "AUTO"}).endpoint_cap == 25


@pytest.mark.parametrize("env, value", [
    ("WEBHOOKS_ENDPOINT_CONCURRENCY", "0"),
    ("WEBHOOKS_ENDPOINT_CONCURRENCY", "-1"),
    ("WEBHOOKS_ENDPOINT_CONCURRENCY", "10001"),
    ("WEBHOOKS_CIRCUIT_FAILURE_RATIO", "0"),
    ("WEBHOOKS_CIRCUIT_FAILURE_RATIO", "1.5"),
    ("WEBHOOKS_CIRCUIT_FAILURE_RATIO", "half"),
    ("WEBHOOKS_CIRCUIT_MIN_VOLUME", "0"),
    ("WEBHOOKS_CIRCUIT_PROBE_INTERVAL", "0s"),
    ("WEBHOOKS_ENDPOINT_RAMP", "0s"),
])
def test_bad_health_settings_name_themselves(env, value):
    with pytest.raises(SettingsError, match=env):
        Settings.load({env: value})


def test_the_probe_interval_may_not_exceed_its_maximum():
    with pytest.raises(SettingsError, match="WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL"):
        Settings.load({"WEBHOOKS_CIRCUIT_PROBE_INTERVAL": "1h",
                       "WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL": "10m"})


def test_rules_carry_the_settings():
    rules = rules_from(Settings.load({
        "WEBHOOKS_ENDPOINT_CONCURRENCY": "9", "WEBHOOKS_ENDPOINT_RAMP": "10s",
        "WEBHOOKS_CIRCUIT_FAILURES": "7", "WEBHOOKS_CIRCUIT_FAILURE_RATIO": "0.25",
        "WEBHOOKS_CIRCUIT_WINDOW": "2m", "WEBHOOKS_CIRCUIT_MIN_VOLUME": "30",
        "WEBHOOKS_CIRCUIT_PROBE_INTERVAL": "5s", "WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL": "1m"}))
    assert rules == health.HealthRules(cap=9, ramp=10, failures_to_open=7, failure_ratio=0.25,
                                       window=120, min_volume=30, probe_interval=5,
                                       max_probe_interval=60)


def test_the_default_settings_are_the_default_rules():
    """The breaker a deployment gets without settings is the one db/ assumes."""
    defaults = Settings.load({"WEBHOOKS_ENDPOINT_CONCURRENCY": "25"})
    assert rules_from(defaults) == health.HealthRules()


def test_zero_failures_switches_the_breaker_off():
    rules = rules_from(Settings.load({"WEBHOOKS_CIRCUIT_FAILURES": "0"}))
    assert rules.failures_to_open == NEVER and rules.min_volume == NEVER


@pytest.mark.parametrize("value", [0, -1, 10_001])
def test_a_per_config_cap_out_of_range_names_the_field(value):
    with pytest.raises(health.InvalidInput, match=r"^maxInFlight:"):
        health.check_max_in_flight(value)


@pytest.mark.parametrize("value", [0.0, -0.5, 1e9, float("inf"), float("nan")])
def test_a_per_config_rate_out_of_range_names_the_field(value):
    with pytest.raises(health.InvalidInput, match=r"^ratePerSecond:"):
        health.check_rate(value)


def test_limits_in_range_are_kept():
    assert health.check_max_in_flight(1) == 1 and health.check_max_in_flight(None) is None
    assert health.check_rate(0.01) == 0.01 and health.check_rate(None) is None

"""An open circuit's probe: one delivery, known by its claim token; its success closes the
circuit, and a failure, a hand-back, a stale claim or a permanent 4xx reopens it."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from db import deliveries
from db.vocabulary import Verdict
from tests.endpoint_health import RULES, claim, events_for, open_circuit, result, row, stage


def test_a_due_probe_is_one_delivery_and_its_success_closes_the_circuit(make):
    config = make.config()
    events_for(make, config, 8)
    open_circuit(make, config)
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    assert probe.probe
    assert row(make, config.id)["state"] == "half_open"
    assert claim(make) == []  # nothing else while the probe is out
    _, transitions = deliveries.record_and_settle(make.pool, [result(probe, 200)], RULES)
    assert [(t.source, t.target) for t in transitions] == [("half_open", "closed")]
    closed = row(make, config.id)
    assert (closed["state"], closed["consecutive_failures"], closed["reason"]) \
        == ("healthy", 0, "the probe succeeded")
    assert closed["ramp_started_at"] is not None
    assert len(claim(make)) == 7  # the rest of the backlog, once the (short) ramp is over


def test_a_failed_probe_reopens_the_circuit_with_a_longer_interval(make):
    config = make.config()
    events_for(make, config, 5)
    open_circuit(make, config)
    first_interval = row(make, config.id)["probe_interval_seconds"]
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    _, transitions = deliveries.record_and_settle(make.pool, [result(probe, 503)], RULES)
    assert [(t.source, t.target) for t in transitions] == [("half_open", "open")]
    reopened = row(make, config.id)
    assert reopened["probe_interval_seconds"] == 2 * first_interval
    assert reopened["probe_token"] is None
    assert claim(make) == []


def test_a_probe_handed_back_reopens_the_circuit_with_the_probe_due_now(make):
    config = make.config()
    events_for(make, config, 5)
    open_circuit(make, config)
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    handed = deliveries.release(make.pool, [(probe.id, probe.token)], RULES)
    assert row(make, config.id)["state"] == "open"
    # The move is reported, so the worker logs and counts it.
    assert [(t.source, t.target) for t in handed.transitions] == [("half_open", "open")]
    (again,) = claim(make)
    assert again.probe


def test_a_stale_probe_is_recovered_and_probed_again(make):
    config = make.config()
    events_for(make, config, 5)
    open_circuit(make, config)
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    make.set(probe.id, claimed_at=probe.claimed_at - timedelta(hours=1))
    handed = deliveries.recover_stale(make.pool, timeout=60, limit=10, rules=RULES)
    assert row(make, config.id)["state"] == "open"
    assert [(t.source, t.target) for t in handed.transitions] == [("half_open", "open")]
    assert claim(make)[0].probe


def test_a_probe_answered_with_a_permanent_4xx_reopens_the_circuit_probing_again_now(make):
    config = make.config()
    events_for(make, config, RULES.failures_to_open + 1)
    open_circuit(make, config)
    interval = row(make, config.id)["probe_interval_seconds"]
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    refused = replace(result(probe, 400), outcome="http_error", next_status="failed",
                      next_delay=None, last_error="HTTP 400", verdict=Verdict.NEUTRAL)
    _, transitions = deliveries.record_and_settle(make.pool, [refused], RULES)
    assert [(t.source, t.target) for t in transitions] == [("half_open", "open")]
    reopened = row(make, config.id)
    assert reopened["probe_interval_seconds"] == interval  # no verdict on the endpoint
    assert reopened["next_probe_at"] <= datetime.now(UTC)
    assert make.row(probe.id)["status"] == "failed"
    (next_probe,) = claim(make)
    assert next_probe.probe and next_probe.id != probe.id


def test_the_probe_is_known_by_its_claim_token(make):
    config = make.config()
    events_for(make, config, 3)
    open_circuit(make, config)
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    (probe,) = claim(make)
    assert uuid.UUID(row(make, config.id)["probe_token"]) == probe.token

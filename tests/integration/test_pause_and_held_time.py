"""Pause and resume: a paused config holds everything and ramps up after it resumes, and time
held (paused or with the circuit open) does not count against a delivery's retry window."""

from __future__ import annotations

from datetime import timedelta

import pytest

from db import configs, deliveries, health
from db.health import HealthRules
from db.scope import PLATFORM
from tests.endpoint_health import RULES, claim, events_for, open_circuit, result, row, stage


def test_pause_holds_everything_and_resume_releases_it(make):
    config = make.config()
    held = events_for(make, config, 3)
    assert health.pause(make.pool, PLATFORM, config.id, reason="maintenance")
    assert not health.pause(make.pool, PLATFORM, config.id, reason="again")  # a no-op
    assert row(make, config.id)["reason"] == "maintenance"
    events_for(make, config, 2)  # new events still create pending deliveries
    assert make.count("SELECT count(*) FROM deliveries WHERE status = 'pending'") == 5
    assert claim(make) == []
    assert deliveries.seconds_until_next_due(make.pool, RULES) is None
    assert all(make.row(id)["attempt_count"] == 0 for id in held)
    assert health.resume(make.pool, PLATFORM, config.id, reason="done")
    assert not health.resume(make.pool, PLATFORM, config.id, reason="again")
    assert [c.id for c in claim(make)][:3] == held  # oldest first


def test_resume_ramps_the_cap_up_from_one(make):
    config = make.config()
    events_for(make, config, 10)
    health.pause(make.pool, PLATFORM, config.id, reason="p")
    health.resume(make.pool, PLATFORM, config.id, reason="r")
    slow_ramp = HealthRules(cap=25, ramp=3600)
    assert len(claim(make, rules=slow_ramp)) == 1
    assert claim(make, rules=slow_ramp) == []


def test_pause_and_resume_answer_not_found_for_unknown_and_deleted_configs(make):
    config = make.config()
    configs.delete(make.pool, PLATFORM, config.id)
    for change in (health.pause, health.resume, health.reset_circuit):
        with pytest.raises(health.NotFound):
            change(make.pool, PLATFORM, config.id, reason="x")
        with pytest.raises(health.NotFound):
            change(make.pool, PLATFORM, "no-such-config", reason="x")


@pytest.mark.parametrize("last_claim", ["marked", "before_the_bookkeeping"])
def test_time_held_does_not_count_against_the_retry_window(make, last_claim):
    """A delivery whose last claim predates the held-time bookkeeping has no mark: the config
    had held nothing then, so the whole hold since counts in its favour too."""
    config = make.config()
    (delivery_id,) = events_for(make, config, 1)
    (first,) = claim(make)
    deliveries.record_and_settle(make.pool, [result(first, 503)], RULES)
    if last_claim == "before_the_bookkeeping":
        make.set(delivery_id, held_mark=None)  # as a release before the bookkeeping left it
    started = make.row(delivery_id)["generation_started_at"]
    health.pause(make.pool, PLATFORM, config.id, reason="p")
    stage(make, config.id, held_since=row(make, config.id)["held_since"] - timedelta(hours=3))
    health.resume(make.pool, PLATFORM, config.id, reason="r")
    (again,) = claim(make)
    moved = again.generation_started_at - started
    assert timedelta(hours=3) <= moved < timedelta(hours=3, minutes=1)


def test_time_with_the_circuit_open_does_not_count_against_the_retry_window(make):
    config = make.config()
    ids = events_for(make, config, RULES.failures_to_open)
    open_circuit(make, config)  # each of them failed once
    started = {id: make.row(id)["generation_started_at"] for id in ids}
    opened = row(make, config.id)
    stage(make, config.id, held_since=opened["held_since"] - timedelta(hours=2),
          next_probe_at=opened["opened_at"])  # open for two hours, the probe now due
    (probe,) = claim(make)
    moved = probe.generation_started_at - started[probe.id]
    assert timedelta(hours=2) <= moved < timedelta(hours=2, minutes=1)

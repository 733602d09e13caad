"""Claims share the database fairly: configs take turns, a backlog hides no one, and a
config's cap, a worker's room and a rate limit bound what one claim takes."""

from __future__ import annotations

import pytest

from db import deliveries, health
from db.health import HealthRules
from db.scope import PLATFORM
from tests.endpoint_health import RULES, claim, events_for, result, row, stage


def test_a_config_with_one_event_is_claimed_in_the_first_cycle_behind_a_backlog(make):
    busy, quiet = make.config(event_types=["busy"]), make.config(event_types=["quiet"])
    events_for(make, busy, 120)
    (waiting,) = events_for(make, quiet, 1)
    claimed = claim(make, limit=10)
    assert waiting in [c.id for c in claimed]
    assert len(claimed) == 10


def test_claims_take_turns_across_configs(make):
    first, second = make.config(event_types=["a"]), make.config(event_types=["b"])
    events_for(make, first, 20)
    events_for(make, second, 20)
    claimed = claim(make, limit=10)
    assert sorted(c.config_id for c in claimed).count(first.id) == 5


def test_a_paused_backlog_of_100_000_ahead_in_due_order_does_not_hide_another_config(make):
    held, other = make.config(event_types=["held"]), make.config(event_types=["other"])
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source) "
            "SELECT 1, 'bulk-' || n, 'held', '{}', now(), 'api' FROM generate_series(1, 100000) n")
        cursor.execute(
            "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, next_attempt_at) "
            "SELECT 1, 'bulk-' || n, %s, 'held', now() - interval '1 hour' "
            "FROM generate_series(1, 100000) n", (held.id,))
    health.pause(make.pool, PLATFORM, held.id, reason="p")
    (waiting,) = events_for(make, other, 1)
    assert [c.id for c in claim(make)] == [waiting]


def test_the_cap_holds_within_one_batch_claim_and_counts_what_is_in_flight(make):
    config = make.config(max_in_flight=3)
    events_for(make, config, 10)
    first = claim(make, limit=50)
    assert len(first) == 3
    assert row(make, config.id)["in_flight"] == 3
    assert claim(make, limit=50) == []
    deliveries.record_and_settle(make.pool, [result(first[0], 200)], RULES)
    assert row(make, config.id)["in_flight"] == 2
    assert len(claim(make, limit=50)) == 1


def test_without_a_max_in_flight_a_claim_takes_the_workers_room_and_no_fleet_wide_bound(
        make):
    """The default is a worker's own bound (a share sending, more ready behind): one claim
    takes no more than the room the worker has, and nothing in the database stops the next
    claim."""
    config = make.config()
    events_for(make, config, 30)
    rules = HealthRules(cap=4, ramp=0.001)
    assert len(claim(make, rules=rules)) == 12  # holding none: three shares
    assert len(deliveries.claim_due(make.pool, owner="w", limit=50, rules=rules,
                                    rooms={config.id: 3})) == 3
    assert deliveries.claim_due(make.pool, owner="w", limit=50, rules=rules,
                                rooms={config.id: 0}) == []
    assert len(deliveries.claim_due(make.pool, owner="w2", limit=50, rules=rules,
                                    hold=2)) == 8
    assert row(make, config.id)["in_flight"] == 23  # still counted, for the gauge


def test_a_max_in_flight_is_the_workers_share_up_to_its_capacity(make):
    config = make.config(max_in_flight=100)
    events_for(make, config, 30)
    rules = HealthRules(cap=4, ramp=0.001)
    assert len(deliveries.claim_due(make.pool, owner="w", limit=50, rules=rules,
                                    capacity=6)) == 18


def test_a_config_the_worker_has_saturated_is_neither_claimed_nor_waited_for(make):
    hung, other = make.config(event_types=["hung"]), make.config(event_types=["other"])
    events_for(make, hung, 5)
    events_for(make, other, 1)
    claimed = deliveries.claim_due(make.pool, owner="w", limit=50, rules=RULES,
                                   rooms={hung.id: 0, other.id: 5})
    assert [c.config_id for c in claimed] == [other.id]
    assert deliveries.seconds_until_next_due(make.pool, RULES, saturated={hung.id}) is None
    assert deliveries.seconds_until_next_due(make.pool, RULES) == 0


def test_a_rate_limit_spaces_claims_and_throttled_deliveries_spend_nothing(make):
    config = make.config(rate_per_second=2.0)
    ids = events_for(make, config, 5)
    assert len(claim(make)) == 1
    assert claim(make, owner="another-worker") == []
    wait = deliveries.seconds_until_next_due(make.pool, RULES)
    assert 0 < wait <= 0.5  # less the time since the claim, which a loaded machine stretches
    spacing = row(make, config.id)["next_send_at"] - row(make, config.id)["served_at"]
    assert spacing.total_seconds() == pytest.approx(0.5)
    assert sum(make.row(id)["attempt_count"] for id in ids) == 0
    stage(make, config.id, next_send_at=row(make, config.id)["served_at"])
    assert len(claim(make, owner="another-worker")) == 1

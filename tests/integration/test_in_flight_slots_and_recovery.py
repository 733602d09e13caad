"""A config's in-flight count stays true: released, recovered, late, cancelled and racing
claims free exactly their slots, and the recovery sweep corrects what drifted anyway."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import gevent

from db import configs, deliveries, events
from db.deliveries import Claimed
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from service.dispatch.recovery import recover_stale_claims
from service.runtime.telemetry import Telemetry
from tests.endpoint_health import RULES, claim, events_for, result, row, stage
from tests.helpers import PATIENCE, wait_until


def test_released_and_recovered_claims_free_their_slots(make):
    config = make.config(max_in_flight=2)
    events_for(make, config, 4)
    a, b = claim(make)
    deliveries.release(make.pool, [(a.id, a.token)], RULES)
    assert row(make, config.id)["in_flight"] == 1
    make.set(b.id, claimed_at=b.claimed_at - timedelta(hours=1))
    assert [m.id for m in deliveries.recover_stale(make.pool, timeout=60, limit=10,
                                                   rules=RULES).moved] == [b.id]
    assert row(make, config.id)["in_flight"] == 0


def test_a_late_result_of_a_recovered_claim_frees_no_second_slot(make):
    config = make.config(max_in_flight=5)
    events_for(make, config, 1)
    (lost,) = claim(make)
    make.set(lost.id, claimed_at=lost.claimed_at - timedelta(hours=1))
    deliveries.recover_stale(make.pool, timeout=60, limit=10, rules=RULES)
    claim(make)
    assert row(make, config.id)["in_flight"] == 1
    assert deliveries.record_and_settle(make.pool, [result(lost, 200)], RULES) == ([], [])
    assert row(make, config.id)["in_flight"] == 1


def test_a_deactivated_config_s_in_flight_result_is_cancelled_and_frees_its_slot(make):
    config = make.config()
    events_for(make, config, 2)
    first, _ = claim(make)
    configs.deactivate(make.pool, PLATFORM, config.id)
    (moved,), _ = deliveries.record_and_settle(make.pool, [result(first, 503)], RULES)
    assert moved.status == "cancelled"
    assert row(make, config.id)["in_flight"] == 1
    assert row(make, config.id)["reason"] == "deactivated by an operator"


def test_a_deleted_config_s_in_flight_result_is_cancelled_and_frees_its_slot(make):
    config = make.config()
    events_for(make, config, 1)
    (claimed,) = claim(make)
    configs.delete(make.pool, PLATFORM, config.id)
    (moved,), _ = deliveries.record_and_settle(make.pool, [result(claimed, 503)], RULES)
    assert moved.status == "cancelled"
    assert row(make, config.id)["in_flight"] == 0


# A claim statement held after it took its snapshot and before its per-config lookups: the
# test's database gets a config_cap that first waits for an advisory lock the test holds.
HOLD_CLAIMS = """
    CREATE OR REPLACE FUNCTION config_cap(health config_health, default_cap integer,
                                          ramp_seconds double precision)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(4242);
        RETURN coalesce(health.max_in_flight, default_cap);
    END
    $$"""
CLAIM_WAITING = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                 "AND wait_event = 'advisory' AND datname = current_database()")


def claim_while_a_delivery_commits(make, config) -> list[Claimed]:
    """Claim while a new delivery of `config`, due before the claim began, commits after the
    claim statement took its snapshot (as an ingest transaction that began first does)."""
    with make.pool.transaction() as cursor:
        cursor.execute(HOLD_CLAIMS)
    event = events.new_event("committed-during-the-claim", config.event_types[0], {},
                             tenant_id=DEFAULT_TENANT_ID, max_payload=1024)
    with make.pool.connection() as holder, make.pool.connection() as ingesting:
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(4242)")
        with ingesting.cursor() as cursor:
            events.ingest(cursor, [event], source="api")
        claiming = gevent.spawn(claim, make, 10)
        wait_until(lambda: make.count(CLAIM_WAITING) == 1)
        ingesting.commit()
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(4242)")
        holder.commit()
    return claiming.get(timeout=PATIENCE)


def test_a_delivery_committed_during_a_claim_is_not_counted_in_flight(make):
    config = make.config()
    events_for(make, config, 1)
    claimed = claim_while_a_delivery_commits(make, config)
    assert len(claimed) == 1
    assert row(make, config.id)["in_flight"] == 1
    assert make.count("SELECT count(*) FROM deliveries WHERE status = 'pending'") == 1


def test_a_probe_committed_during_a_claim_does_not_leave_the_circuit_half_open(make):
    config = make.config()
    (held,) = events_for(make, config, 1)
    stage(make, config.id, circuit="open", opened_at=datetime.now(UTC),
          next_probe_at=datetime.now(UTC) - timedelta(seconds=1), probe_interval_seconds=60)
    with make.pool.connection() as other:  # another worker holds the only visible delivery
        with other.cursor() as cursor:
            cursor.execute("SELECT id FROM deliveries WHERE id = %s FOR UPDATE", (held,))
        assert claim_while_a_delivery_commits(make, config) == []
        other.rollback()
    assert row(make, config.id)["circuit"] == "open"
    assert row(make, config.id)["in_flight"] == 0
    (probe,) = claim(make)
    assert probe.probe and row(make, config.id)["circuit"] == "half_open"


def test_the_recovery_sweep_corrects_in_flight_counts_that_drifted(make):
    """However the count came to disagree (a bug, a row changed by hand), the sweep sets it to
    the deliveries in flight: a config is never held at its cap for good."""
    drifted, below, steady = (make.config(event_types=[name]) for name in ("a", "b", "c"))
    for config in (below, steady):
        events_for(make, config, 2)
    in_flight = claim(make)
    assert len(in_flight) == 4
    stage(make, drifted.id, in_flight=RULES.cap)  # nothing of it is in flight
    stage(make, below.id, in_flight=0)  # two of it are
    recover_stale_claims(make.pool, timeout=60, telemetry=Telemetry(), rules=RULES)
    assert [row(make, c.id)["in_flight"] for c in (drifted, below, steady)] == [0, 2, 2]
    events_for(make, drifted, 1)
    assert [c.config_id for c in claim(make)] == [drifted.id]


def test_the_recovery_sweep_reopens_a_half_open_circuit_whose_probe_is_gone(make):
    config = make.config()
    events_for(make, config, 2)
    stage(make, config.id, circuit="half_open", probe_token=str(uuid.uuid4()),
          opened_at=datetime.now(UTC), probe_interval_seconds=60)
    assert claim(make) == []  # half-open: nothing but its probe may go
    recover_stale_claims(make.pool, timeout=60, telemetry=Telemetry(), rules=RULES)
    health_row = row(make, config.id)
    assert (health_row["circuit"], health_row["probe_token"]) == ("open", None)
    (probe,) = claim(make)
    assert probe.probe


def test_the_recovery_sweep_leaves_a_probe_in_flight_alone(make):
    config = make.config()
    events_for(make, config, 2)
    stage(make, config.id, circuit="open", opened_at=datetime.now(UTC),
          next_probe_at=datetime.now(UTC) - timedelta(seconds=1), probe_interval_seconds=60)
    (probe,) = claim(make)
    recover_stale_claims(make.pool, timeout=60, telemetry=Telemetry(), rules=RULES)
    health_row = row(make, config.id)
    assert (health_row["circuit"], health_row["probe_token"], health_row["in_flight"]) == (
        "half_open", str(probe.token), 1)

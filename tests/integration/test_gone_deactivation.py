"""A 410 Gone deactivates its config in the transaction that records it: the answer and the
deactivation are committed together or not at all."""

from __future__ import annotations

from dataclasses import replace

import pytest

from db import configs, deliveries, health
from db.errors import InvalidData
from db.scope import PLATFORM
from db.vocabulary import HealthChangeKind, Verdict
from tests.endpoint_health import RULES, claim, events_for, result, row

GONE = "endpoint answered 410 Gone"


def gone(claimed):
    return replace(result(claimed, 410), next_status="failed", next_delay=None,
                   last_error="HTTP 410", verdict=Verdict.NEUTRAL)


def test_the_answer_and_the_deactivation_land_together(make):
    config = make.config(max_in_flight=2)
    ids = events_for(make, config, 4)
    first, second = claim(make, limit=2)
    moved, _, deactivated = deliveries.record_and_deactivate(
        make.pool, [gone(first), result(second, 503)], RULES, configs_touched={config.id},
        deactivate={config.id}, gone=(), reason=GONE)
    assert deactivated == {config.id: 2}  # the two never claimed
    assert {m.id: m.status for m in moved} == {first.id: "failed", second.id: "cancelled"}
    assert not configs.get(make.pool, PLATFORM, config.id).active
    assert [make.row(id)["status"] for id in ids[2:]] == ["cancelled", "cancelled"]
    assert row(make, config.id)["reason"] == GONE
    assert row(make, config.id)["in_flight"] == 0
    (change, *_) = health.changes(make.pool, PLATFORM, config.id, limit=10)
    assert (change.change, change.actor, change.reason) == (
        HealthChangeKind.DEACTIVATED, None, GONE)


def test_an_answer_the_database_refuses_deactivates_nothing(make):
    config = make.config()
    ids = events_for(make, config, 2)
    (claimed,) = claim(make, limit=1)
    with pytest.raises(InvalidData):
        deliveries.record_and_deactivate(
            make.pool, [replace(gone(claimed), response_excerpt="gone\x00")], RULES,
            configs_touched={config.id}, deactivate={config.id}, gone=(), reason=GONE)
    assert configs.get(make.pool, PLATFORM, config.id).active
    assert [make.row(id)["status"] for id in ids] == ["delivering", "pending"]
    assert health.changes(make.pool, PLATFORM, config.id, limit=10) == []


def test_a_config_already_off_or_deleted_is_not_deactivated_again(make):
    off, deleted = make.config(event_types=["off"]), make.config(event_types=["deleted"])
    events_for(make, off, 1)
    events_for(make, deleted, 1)
    claimed = claim(make, limit=2)
    configs.deactivate(make.pool, PLATFORM, off.id)
    configs.delete(make.pool, PLATFORM, deleted.id)
    moved, _, deactivated = deliveries.record_and_deactivate(
        make.pool, [gone(c) for c in claimed], RULES, configs_touched={off.id, deleted.id},
        deactivate={off.id, deleted.id}, gone=(), reason=GONE)
    assert deactivated == {}  # each was off already: no second deactivation, no history row
    assert {m.status for m in moved} == {"failed"}  # the answer itself is a final failure


def test_a_final_failure_recorded_apart_from_the_410_stays_failed(make):
    """A batch stored in parts: the part without the 410 is recorded after the part that
    deactivated the config, and its final failure stays failed, not cancelled."""
    config = make.config()
    events_for(make, config, 2)
    first, second = claim(make, limit=2)
    deliveries.record_and_deactivate(make.pool, [gone(first)], RULES,
                                     configs_touched={config.id}, deactivate={config.id},
                                     gone=(), reason=GONE)
    final = replace(gone(second), status_code=404, last_error="HTTP 404")
    (moved,), _ = deliveries.record_and_settle(make.pool, [final], RULES, gone={config.id})
    assert moved.status == "failed"

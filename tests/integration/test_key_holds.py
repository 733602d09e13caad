"""Which failures hold their ordering key, and for how long: only one that failed under per-key
ordering with blocking on (switching the rules on never revives an earlier failure), one that
retention never deletes while its config exists, and keys forgotten with their last delivery."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from db import configs, deliveries, events, retention
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.vocabulary import Ordering
from tests.endpoint_health import RULES, claim, result

DAY = 86400.0


def publish(make, n: int, key: str = "k") -> int:
    event = events.new_event(f"ledger-{n}", "ledger", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1000,
                             ordering_key=key)
    (delivery_id,) = events.publish(make.pool, event).delivery_ids
    return int(delivery_id)


def answer(make, delivery_id: int, status_code: int) -> None:
    """Claim the one due delivery (it must be `delivery_id`) and record its answer: 200
    succeeds, 400 fails for good."""
    (claimed,) = claim(make, limit=10)
    assert claimed.id == delivery_id
    outcome = result(claimed, status_code)
    if status_code != 200:
        outcome = dataclasses.replace(outcome, next_status="failed", next_delay=None)
    deliveries.record_and_settle(make.pool, [outcome], RULES)


def waits(make, delivery_id: int) -> bool:
    return make.row(delivery_id)["next_attempt_at"] is None


def version(make, config_id: str) -> int:
    return make.count("SELECT version FROM config_health WHERE config_id = %s", (config_id,))


def test_turning_blocking_on_makes_no_earlier_failure_hold_its_key(make):
    config = make.config(event_types=["ledger"], ordering=Ordering.PER_KEY,
                         block_on_failure=False)
    first, second = publish(make, 1), publish(make, 2)
    answer(make, first, 400)  # fails; the key goes on
    answer(make, second, 200)
    configs.update(make.pool, PLATFORM, config.id, block_on_failure=True)
    assert not make.row(first)["blocks_key"]
    third = publish(make, 3)
    assert not waits(make, third)
    answer(make, third, 200)


def test_ordered_then_unordered_then_ordered_again_revives_no_failure(make):
    config = make.config(event_types=["ledger"], ordering=Ordering.PER_KEY)
    first, second = publish(make, 1), publish(make, 2)
    answer(make, first, 400)
    assert make.row(first)["blocks_key"] and waits(make, second)
    configs.update(make.pool, PLATFORM, config.id, ordering=Ordering.UNORDERED)
    assert not make.row(first)["blocks_key"]  # unordered: nothing holds a key
    answer(make, second, 200)
    configs.update(make.pool, PLATFORM, config.id, ordering=Ordering.PER_KEY)
    assert not make.row(first)["blocks_key"]
    third = publish(make, 3)
    assert not waits(make, third)


def test_a_failure_under_the_rules_still_holds_its_key(make):
    make.config(event_types=["ledger"], ordering=Ordering.PER_KEY)
    first, second = publish(make, 1), publish(make, 2)
    answer(make, first, 400)
    assert make.row(first)["blocks_key"] and waits(make, second)


def test_retention_keeps_a_failure_that_holds_its_key_while_its_config_exists(make):
    config = make.config(event_types=["ledger"], ordering=Ordering.PER_KEY)
    first, second = publish(make, 1), publish(make, 2)
    answer(make, first, 400)
    unordered = make.config(event_types=["note"])
    (other,) = make.event(type="note")[1]
    answer(make, other, 400)  # fails, holding nothing
    long_ago = datetime.now(UTC) - timedelta(days=200)
    for delivery_id in (first, other):
        make.set(delivery_id, updated_at=long_ago)

    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert deleted.finished == 1  # the failure that holds no key
    assert make.count("SELECT count(*) FROM deliveries WHERE id = %s", (other,)) == 0
    assert make.row(first)["blocks_key"]  # kept: its key would go on, unannounced
    assert waits(make, second)

    configs.delete(make.pool, PLATFORM, config.id)
    configs.delete(make.pool, PLATFORM, unordered.id)
    retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert make.count("SELECT count(*) FROM deliveries WHERE id = %s", (first,)) == 0


def test_retention_forgets_a_key_with_its_last_delivery(make):
    config = make.config(event_types=["ledger"], ordering=Ordering.PER_KEY)
    first = publish(make, 1)
    answer(make, first, 200)
    kept = publish(make, 2, key="busy")
    make.set(first, updated_at=datetime.now(UTC) - timedelta(days=40))
    keys = "SELECT count(*) FROM ordering_keys WHERE config_id = %s AND ordering_key = %s"
    assert make.count(keys, (config.id, "k")) == 1

    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert (deleted.succeeded, deleted.ordering_keys) == (1, 1)
    assert make.count(keys, (config.id, "k")) == 0
    assert make.count(keys, (config.id, "busy")) == 1  # it has a delivery still
    again = publish(make, 3)
    assert make.row(again)["sequence"] == 1  # the key starts again
    assert make.row(kept)["sequence"] == 1


def test_a_change_of_ordering_or_blocking_counts_up_the_config_version(make):
    config = make.config(event_types=["ledger"])
    start = version(make, config.id)
    configs.update(make.pool, PLATFORM, config.id, ordering=Ordering.PER_KEY)
    assert version(make, config.id) == start + 1
    configs.update(make.pool, PLATFORM, config.id, block_on_failure=False)
    assert version(make, config.id) == start + 2
    configs.update(make.pool, PLATFORM, config.id, name="renamed")  # sends nothing differently
    assert version(make, config.id) == start + 2


def test_a_config_change_settles_only_the_keys_with_something_under_way(make):
    """Settling a key locks its row (which leaves the row's xmax set): a change of the config
    touches the keys that have a delivery pending, in flight or holding, not every key it
    ever had."""
    config = make.config(event_types=["ledger"], ordering=Ordering.PER_KEY)
    for n in range(20):
        answer(make, publish(make, n, key=f"done-{n}"), 200)
    publish(make, 100, key="open")
    lockers = ("SELECT ordering_key, xmax::text FROM ordering_keys WHERE config_id = %s "
               "ORDER BY ordering_key")
    before = dict(make.rows(lockers, (config.id,)))
    configs.update(make.pool, PLATFORM, config.id, block_on_failure=False)
    after = dict(make.rows(lockers, (config.id,)))
    assert len(after) == 21
    assert [key for key in after if after[key] != before[key]] == ["open"]

"""Races on the real database, each staged step by step with row locks held by a session of the
test: a claim that commits after a config change never returns what the change replaced, and
deactivations, deletions, ordering switches and replays take their locks in the one order
claims take theirs (configs, deliveries, health rows, key rows), so none deadlocks with a
claim; and a change announced to the operational tenant waits for none of the relay's locks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gevent
import pytest

from db import configs, deliveries, events, operational, tenants
from db.pool import connect
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.vocabulary import Ordering
from tests.endpoint_health import RULES, claim, result
from tests.helpers import PATIENCE, wait_until

LOCK_WAITS = ("SELECT count(*) FROM pg_stat_activity "
              "WHERE datname = current_database() AND wait_event_type = 'Lock'")


@contextmanager
def holding(pool, statement: str, params=None) -> Iterator[None]:
    """Hold the row locks `statement` takes, in a session of the test, for the block."""
    conn = connect(pool.dsn)
    try:
        with conn.cursor() as cursor:
            cursor.execute(statement, params)
        yield
    finally:
        conn.rollback()
        conn.close()


def waiting(make, count: int) -> None:
    """Wait until `count` sessions of the test database wait for a lock."""
    wait_until(lambda: make.count(LOCK_WAITS) >= count, timeout=PATIENCE)


def settled(*jobs: gevent.Greenlet) -> list:
    """Join the jobs; return their values, failing the test on any error (a deadlock)."""
    gevent.joinall(jobs, timeout=PATIENCE)
    for job in jobs:
        assert job.ready(), "a session is still waiting: the race did not resolve"
        if job.exception is not None:
            raise job.exception
    return [job.value for job in jobs]


def publish(make, type: str, n: int, key: str | None = None) -> int:
    event = events.new_event(f"{type}-{n}", type, {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1000,
                             ordering_key=key)
    (delivery_id,) = events.publish(make.pool, event).delivery_ids
    return int(delivery_id)


def health_row(config_id: str, mode: str) -> tuple[str, tuple]:
    return (f"SELECT 1 FROM config_health WHERE config_id = %s FOR {mode}", (config_id,))


# -- a claim sees every change that committed before it ---------------------------------------

CHANGES: dict[str, Callable] = {
    "endpoint": lambda make, config: configs.update(make.pool, PLATFORM, config.id,
                                                    endpoint="http://127.0.0.1:9/new"),
    "secret revoked": lambda make, config: configs.rotate_secret(
        make.pool, PLATFORM, config.id, grace_seconds=0),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_claim_that_commits_after_a_change_sends_nothing_the_change_replaced(make, change):
    """The claim reads the config from its snapshot: a change that commits while the claim
    waits for the health row must make the claim read it again."""
    config = make.config(endpoint="http://127.0.0.1:9/old")
    configs.rotate_secret(make.pool, PLATFORM, config.id,
                          grace_seconds=3600)  # a previous secret too
    publish(make, config.event_types[0], 1)
    before = configs.get(make.pool, PLATFORM, config.id)
    with holding(make.pool, *health_row(config.id, "UPDATE")):
        changing = gevent.spawn(CHANGES[change], make, config)
        waiting(make, 1)  # the change waits for the health row (its version)
        claiming = gevent.spawn(claim, make, 10)
        waiting(make, 2)  # the claim too, behind it
    _, (claimed,) = settled(changing, claiming)
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT endpoint, secret, version FROM configs "
                       "JOIN config_health ON config_id = id WHERE id = %s", (config.id,))
        endpoint, secret, version = cursor.fetchone()
    assert (claimed.endpoint, claimed.secret) == (endpoint, secret)
    assert claimed.config_version == version
    if change == "endpoint":
        assert endpoint != before.endpoint
    else:
        assert claimed.previous_secrets == []  # revoked at once: nothing else signs


# -- deactivation, deletion and ordering switches against a claim ------------------------------

STOPS: dict[str, Callable] = {
    "deactivate": lambda make, config: configs.deactivate(make.pool, PLATFORM, config.id),
    "delete": lambda make, config: configs.delete(make.pool, PLATFORM, config.id),
    "switch to per-key": lambda make, config: configs.update(
        make.pool, PLATFORM, config.id, ordering=Ordering.PER_KEY),
}


@pytest.mark.parametrize("stop", STOPS)
def test_a_config_change_that_moves_its_deliveries_does_not_deadlock_with_a_claim(make, stop):
    """A claim holds the deliveries it takes and then waits for the health row; a change that
    took the health row first and then waited for those deliveries would deadlock with it.
    The health row is held here in a mode the claim waits for and the change's own update of
    it (its version) does not, so the change gets as far as it can before the claim goes on."""
    config = make.config()
    ids = [publish(make, config.event_types[0], n, key="k") for n in range(6)]
    with holding(make.pool, *health_row(config.id, "KEY SHARE")):
        claiming = gevent.spawn(claim, make, 3)
        waiting(make, 1)  # the claim holds three deliveries, waiting for the health row
        changing = gevent.spawn(STOPS[stop], make, config)
        waiting(make, 2)
    claimed, _ = settled(claiming, changing)
    assert len(claimed) == 3
    statuses = {make.row(i)["status"] for i in ids if i not in {c.id for c in claimed}}
    assert statuses == ({"pending"} if stop == "switch to per-key" else {"cancelled"})


def test_a_410_that_deactivates_does_not_deadlock_with_a_claim(make):
    """The record of a 410 locks the configs, then the pending deliveries, then the health rows:
    the order a claim takes its own in."""
    config = make.config()
    publish(make, config.event_types[0], 0)
    (first,) = claim(make, 1)
    for n in range(1, 4):
        publish(make, config.event_types[0], n)
    gone = dataclasses.replace(result(first, 410), next_status="failed", next_delay=None)
    with holding(make.pool, *health_row(config.id, "KEY SHARE")):
        claiming = gevent.spawn(claim, make, 2)
        waiting(make, 1)
        recording = gevent.spawn(
            deliveries.record_and_deactivate, make.pool, [gone], RULES,
            configs_touched=[config.id], deactivate=[config.id], gone=[config.id],
            reason="endpoint answered 410 Gone")
        waiting(make, 2)
    claimed, (_, _, deactivated) = settled(claiming, recording)
    assert len(claimed) == 2 and deactivated == {config.id: 1}
    assert make.row(first.id)["status"] == "failed"


# -- a replay of an ordered key against a claim of its head ------------------------------------

def test_replaying_an_earlier_failure_of_a_key_does_not_deadlock_with_a_claim_of_its_head(make):
    """The replayed delivery becomes its key's head and the head that was due must wait: the
    replay locks the key's pending deliveries before anything else, so a claim of that head
    either commits first (and the replayed one waits for it) or skips it."""
    config = make.config(ordering=Ordering.PER_KEY, block_on_failure=False)
    earlier = publish(make, config.event_types[0], 0, key="k")
    head = publish(make, config.event_types[0], 1, key="k")
    (claimed,) = claim(make, 10)
    assert claimed.id == earlier
    failed = dataclasses.replace(result(claimed, 400), next_status="failed", next_delay=None)
    deliveries.record_and_settle(make.pool, [failed], RULES)
    assert make.row(head)["next_attempt_at"] is not None  # the key went on: its head is due

    def replay():
        with make.pool.transaction() as cursor:
            return deliveries.replay(cursor, PLATFORM, earlier)

    # The key's row held: the replay stops where it settles the key's turns.
    with holding(make.pool, "SELECT 1 FROM ordering_keys WHERE config_id = %s FOR UPDATE",
                 (config.id,)):
        replaying = gevent.spawn(replay)
        waiting(make, 1)
        claiming = gevent.spawn(claim, make, 10)
        wait_until(lambda: claiming.ready() or make.count(LOCK_WAITS) >= 2, timeout=PATIENCE)
    _, taken = settled(replaying, claiming)
    in_flight = [c.id for c in taken]
    assert in_flight in ([], [head])
    if in_flight:  # the claim went first: the replayed delivery waits for it
        assert make.row(earlier)["next_attempt_at"] is None
    else:  # the replay went first: it is the head now, due; the other waits
        assert make.row(earlier)["next_attempt_at"] is not None
        assert make.row(head)["next_attempt_at"] is None


# -- an announcement written while the relay waits for the operational tenant's config ----------

def test_a_change_announced_while_the_relay_publishes_waits_for_nothing(make):
    """The relay holds the announcements it took while it fans them out, which share-locks the
    operational tenant's configs; a change announced meanwhile writes a new row, which waits for
    none of the relay's locks."""
    hearing = tenants.create(make.pool, uid="platform")
    platform = make.config(event_types=["endpoint.*"], tenant_id=hearing.id)
    first, second = make.config(), make.config()
    operational.point_at(make.pool, "platform")
    configs.deactivate(make.pool, PLATFORM, first.id)  # announced: one row to publish

    def relay():
        return operational.relay(make.pool, tenant_id=hearing.id, public_url=None,
                                 max_payload=1 << 20, strict=False, limit=10)

    # The platform's config held, as its own deactivation holds it first: the relay's fan-out
    # waits for it, holding the announcement it took.
    with holding(make.pool, "SELECT 1 FROM configs WHERE id = %s FOR UPDATE", (platform.id,)):
        relaying = gevent.spawn(relay)
        waiting(make, 1)
        (change,) = settled(gevent.spawn(configs.deactivate, make.pool, PLATFORM, second.id))
        assert change.changed
    assert settled(relaying) == [1]
    assert make.column("SELECT config_id FROM operational_events") == [second.id]

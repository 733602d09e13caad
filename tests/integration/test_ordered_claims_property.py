"""The claim rule of ordered delivery, as a property against the real database: whatever the
interleaving of claims, results (success, retry, failure), stale-claim recoveries and replays,
each key has at most one delivery in flight, only its head is ever due and never beside one
in flight, and each key's deliveries first succeed in the order they were ingested (without
blockOnFailure, but for those that failed and let the key move on)."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import deliveries, events, health
from db.errors import NotEligible
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.vocabulary import Ordering
from tests.endpoint_health import RULES, claim, result

KEYS = ("a", "b", "c")
# The breaker is not what is tested here: an opened circuit would only hold everything.
UNBROKEN = dataclasses.replace(RULES, failures_to_open=health.NEVER, min_volume=health.NEVER)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("claim"), st.integers(1, 4)),
        st.tuples(st.just("succeed"), st.integers(0, 9)),
        st.tuples(st.just("retry"), st.integers(0, 9)),
        st.tuples(st.just("fail"), st.integers(0, 9)),
        st.tuples(st.just("recover"), st.integers(0, 9)),
        st.tuples(st.just("replay"), st.integers(0, 30)),
    ),
    max_size=40)


def _rows(make, config_id):
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id, ordering_key, sequence, status, next_attempt_at, blocks_key "
                       "FROM deliveries WHERE config_id = %s ORDER BY ordering_key, sequence",
                       (config_id,))
        return cursor.fetchall()


def _check_turns(make, config_id) -> None:
    by_key: dict[str, list] = {}
    for row in _rows(make, config_id):
        by_key.setdefault(row[1], []).append(row)
    for key, rows in by_key.items():
        unsettled = [r for r in rows if r[3] in ("pending", "delivering") or r[5]]
        flying = [r for r in rows if r[3] == "delivering"]
        due = [r for r in rows if r[3] == "pending" and r[4] is not None]
        assert len(flying) <= 1, (key, rows)
        assert len(due) <= 1, (key, rows)
        if due:  # only the head goes, and only with nothing of its key in flight
            assert due[0][0] == unsettled[0][0] and not flying, (key, rows)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS, block=st.booleans())
def test_any_interleaving_keeps_each_key_in_order(make, operations, block):
    config = make.config(event_types=[f"prop-{make.count('SELECT count(*) FROM configs')}"],
                         ordering=Ordering.PER_KEY, block_on_failure=block)
    kind = config.event_types[0]
    with make.pool.transaction() as cursor:  # earlier examples' configs claim nothing more
        cursor.execute("UPDATE config_health SET paused_at = now() WHERE config_id <> %s "
                       "AND paused_at IS NULL", (config.id,))
    published = []
    for n in range(9):
        key = KEYS[n % 3]
        event = events.new_event(f"{kind}-{n}", kind, {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                                 max_payload=1000,
                                 ordering_key=key)
        (delivery_id,) = events.publish(make.pool, event).delivery_ids
        published.append((key, int(delivery_id)))
    held: list = []
    successes: list[int] = []
    failures: set[int] = set()

    def record(index: int, status: int, *, delay: float | None = None, failed=False):
        if not held:
            return
        claimed = held.pop(index % len(held))
        answered = result(claimed, status)
        if delay is not None:
            answered = dataclasses.replace(answered, next_delay=delay)
        if failed:
            answered = dataclasses.replace(answered, next_status="failed", next_delay=None)
            failures.add(claimed.id)
        moved = deliveries.record_and_settle(make.pool, [answered], UNBROKEN)
        if status == 200 and moved:
            successes.append(claimed.id)

    for name, value in operations:
        if name == "claim":
            held += [c for c in claim(make, limit=value, rules=UNBROKEN)
                     if c.config_id == config.id]
        elif name == "succeed":
            record(value, 200)
        elif name == "retry":
            record(value, 503, delay=0.0)
        elif name == "fail":
            record(value, 400, failed=True)
        elif name == "recover" and held:
            stale = held.pop(value % len(held))
            make.set(stale.id, claimed_at=stale.claimed_at - timedelta(hours=1))
            deliveries.recover_stale(make.pool, timeout=60, limit=100, rules=UNBROKEN)
        elif name == "replay":
            with make.pool.transaction() as cursor, contextlib.suppress(NotEligible):
                deliveries.replay(cursor, PLATFORM, published[value % len(published)][1])
        _check_turns(make, config.id)

    # Then everything is let through: failures replayed, every claim answered 200.
    for _ in range(60):
        while held:
            record(0, 200)
        held = [c for c in claim(make, limit=10, rules=UNBROKEN) if c.config_id == config.id]
        for row in _rows(make, config.id):
            if row[3] == "failed":
                with make.pool.transaction() as cursor:
                    deliveries.replay(cursor, PLATFORM, row[0])
        _check_turns(make, config.id)
        if not held and all(r[3] == "succeeded" for r in _rows(make, config.id)):
            break
    while held:
        record(0, 200)
    assert all(r[3] == "succeeded" for r in _rows(make, config.id)), _rows(make, config.id)
    # Each key's first successes come in ingestion order; without blockOnFailure a delivery
    # that failed let the key move on, so its own success (after a replay) may come later.
    order = {delivery_id: position for position, delivery_id in enumerate(successes)}
    for key in KEYS:
        ids = [delivery_id for k, delivery_id in published
               if k == key and (block or delivery_id not in failures)]
        firsts = sorted(ids, key=lambda delivery_id: order[delivery_id])
        assert firsts == ids, (key, successes)

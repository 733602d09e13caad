"""A tenant's publish rate, the rule itself (`take_publish_slots`), on the real database with
the clock simulated: each step puts the tenant's schedule where the simulated clock has it
relative to the transaction's now(), takes slots for some new events, and reads where the
schedule went.

The contract checked: an event is spaced 1/rate from the last (rounded up to the
microsecond), a burst is one second's worth (rounded down, at least one event); whatever the
pattern of calls, no span of time holds more than a burst and the rate's share of that span;
a call gets as many of its events as fit, in order; the wait it is told is exact; events
stored before, an id given twice, and tenants without a rate take nothing.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import events, tenants
from db.events import NewEvent
from db.scope import DEFAULT_TENANT_ID

TENANT = "limited"
SPECIAL_RATES = (0.01, 0.3, 1.0, 1.5, 2.5, 3.0, 6.0, 7.0, 10.0, 1000.0, 3e6)
names = itertools.count()


def spacing_of(rate: float) -> int:
    """Microseconds between two events: 1/rate, rounded up."""
    return max(1, min(math.ceil(1e6 / rate), 10**12))


def burst_of(rate: float) -> int:
    """Events at once: one second's worth, rounded down, at least one."""
    return max(1, min(math.floor(rate), 10**6))


def take(pool, tenant_id: int, ahead: int | None, count: int, *, ids: list[str] | None = None
         ) -> tuple[dict[int, events.Waiting], int | None]:
    """Set the schedule `ahead` microseconds from now (None: never set), offer `count` new
    events (or those of `ids`), and return what waits and how far ahead the schedule is."""
    ids = ids if ids is not None else [f"e{next(names)}" for _ in range(count)]
    with pool.transaction() as cursor:
        cursor.execute("UPDATE tenants SET publish_schedule = now() + %s * interval '1 us' "
                       "WHERE id = %s", (ahead, tenant_id))
        waiting = events.take_publish_slots(
            cursor, [NewEvent(id=id, type="t", payload="{}", tenant_id=tenant_id) for id in ids])
        cursor.execute("SELECT (extract(epoch FROM publish_schedule - now()) * 1e6)::bigint "
                       "FROM tenants WHERE id = %s", (tenant_id,))
        (after,) = cursor.fetchone()
    return waiting, after


def microseconds(seconds: float) -> int:
    return round(seconds * 1e6)


@pytest.fixture
def limited(pool):
    return tenants.create(pool, uid=TENANT, events_per_second=1.0)


@st.composite
def histories(draw):
    """A rate and calls to it: (microseconds since the previous call, events offered)."""
    rate = draw(st.one_of(st.sampled_from(SPECIAL_RATES),
                          st.floats(0.01, 10_000, allow_nan=False)))
    spacing, burst = spacing_of(rate), burst_of(rate)
    # Gaps of whole spacings give or take a microsecond find the rule's edges.
    edges = st.builds(lambda spacings, off: max(0, spacings * spacing + off),
                      st.integers(0, burst + 1), st.integers(-2, 2))
    gaps = st.one_of(st.just(0), edges, st.integers(0, 3 * spacing),
                     st.integers(0, spacing * burst + spacing))
    counts = st.one_of(st.integers(0, 4), st.integers(0, min(2 * burst + 2, 1500)))
    return rate, draw(st.lists(st.tuples(gaps, counts), min_size=1, max_size=8))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories())
def test_as_many_events_fit_as_a_burst_allows_and_no_span_holds_more_than_its_share(
        pool, limited, history):
    rate, calls = history
    tenants.update(pool, TENANT, events_per_second=rate)
    spacing, burst = spacing_of(rate), burst_of(rate)
    clock, schedule = 0, None  # simulated microseconds; where the schedule is on that clock
    granted_at: list[tuple[int, int]] = []
    for gap, count in calls:
        clock += gap
        ahead = None if schedule is None else schedule - clock
        waiting, after = take(pool, limited.id, ahead, count)
        granted = count - len(waiting)
        # A call gets the first of its events that fit within a burst's span of now, in order.
        counted = min(max(ahead or 0, 0), spacing * burst)  # the schedule, never before now
        assert granted == min(count, (spacing * burst - counted) // spacing)
        assert sorted(waiting) == list(range(granted, count))
        if granted:
            assert after == counted + granted * spacing
        if waiting:
            (wait,) = {microseconds(w.seconds) for w in waiting.values()}
            assert wait > 0
            # As many as fit: not one more, at the same moment.
            assert take(pool, limited.id, after, 1)[0]
            # The wait is exact: then the rest (a burst at most) fits, a microsecond earlier
            # it does not.
            rest = min(count - granted, burst)
            assert not take(pool, limited.id, after - wait, rest)[0]
            assert take(pool, limited.id, after - wait + 1, rest)[0]
        if after is not None:
            schedule = clock + after
        granted_at.append((clock, granted))
    for i, j in itertools.combinations_with_replacement(range(len(granted_at)), 2):
        published = sum(granted for _, granted in granted_at[i:j + 1])
        span = granted_at[j][0] - granted_at[i][0]
        assert published <= burst + span // spacing, (i, j, granted_at)


@pytest.mark.parametrize(("rate", "burst", "next_after"), [
    (3.0, 3, 0.333334), (0.5, 1, 2.0), (2.5, 2, 0.4), (1000.0, 1000, 0.001), (0.01, 1, 100.0)])
def test_a_burst_is_one_seconds_worth_and_the_next_event_waits_its_spacing(
        pool, rate, burst, next_after):
    tenant = tenants.create(pool, uid=f"r{rate}", events_per_second=rate)
    waiting, after = take(pool, tenant.id, None, burst + 1)
    assert list(waiting) == [burst]
    assert waiting[burst].seconds == pytest.approx(next_after, abs=1e-6)
    assert waiting[burst].tenant_uid == tenant.uid
    assert after == burst * spacing_of(rate)


def test_a_raised_rate_applies_within_a_burst_of_the_new_one(pool, limited):
    tenants.update(pool, TENANT, events_per_second=0.01)
    _, after = take(pool, limited.id, None, 1)
    assert after == 100_000_000  # the next event in 100 s at the old rate
    tenants.update(pool, TENANT, events_per_second=10.0)
    waiting, _ = take(pool, limited.id, after, 1)
    assert [w.seconds for w in waiting.values()] == [pytest.approx(0.1)]


def test_events_stored_before_and_ids_given_twice_take_one_slot_or_none(pool, limited, make):
    tenants.update(pool, TENANT, events_per_second=0.01)  # one event, then one per 100 s
    with pool.transaction() as cursor:
        events.ingest(cursor, [NewEvent(id="old", type="t", payload="{}",
                                        tenant_id=limited.id)], source="api")
    waiting, after = take(pool, limited.id, None, 0, ids=["old", "new", "old", "new"])
    assert waiting == {} and after == 100_000_000
    waiting, _ = take(pool, limited.id, after, 0, ids=["old", "later", "old", "later"])
    assert sorted(waiting) == [1, 3]  # each place of the one new id waits


def test_a_tenant_without_a_rate_takes_no_slot(pool):
    waiting, after = take(pool, DEFAULT_TENANT_ID, None, 5000)
    assert waiting == {} and after is None

"""The pacer: one worker's sends of a rate-limited config never closer than 1/rate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy.pacing import Pacer


def test_without_a_rate_nothing_waits():
    pacer = Pacer()
    assert [pacer.reserve("c", None, 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]


def test_sends_that_queued_together_go_one_interval_apart():
    pacer = Pacer()
    assert [pacer.reserve("c", 4.0, 10.0) for _ in range(3)] == [0.0, 0.25, 0.5]
    assert pacer.reserve("other", 4.0, 10.0) == 0.0  # each config on its own


def test_wait_reserves_nothing():
    pacer = Pacer()
    pacer.reserve("c", 2.0, 0.0)
    assert pacer.wait("c", 2.0, 0.1) == pytest.approx(0.4)
    assert pacer.wait("c", 2.0, 0.1) == pytest.approx(0.4)
    assert pacer.wait("c", 2.0, 1.0) == 0.0


@given(st.lists(st.tuples(st.integers(0, 80), st.floats(0, 3)), max_size=300),
       st.floats(0.5, 1000))
def test_each_send_starts_one_interval_after_the_previous_or_at_once(calls, rate):
    pacer, now, last = Pacer(), 0.0, {}
    for config, step in calls:
        now += step
        start = now + pacer.reserve(str(config), rate, now)
        # spaced by the rate, and never later than the rate asks (many configs: the pacer
        # forgets those whose next send could start now anyway)
        assert start == pytest.approx(max(now, last.get(config, -1e9) + 1 / rate), abs=1e-9)
        last[config] = start

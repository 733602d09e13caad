"""How stats combine exact counts that stop at a bound with the planner's estimates."""

from __future__ import annotations

import pytest

from db.counting import Count, combine, worth_counting

BOUND = 100


@pytest.mark.parametrize("exact", [0, 1, 57, BOUND - 1])
@pytest.mark.parametrize("estimate", [None, 0, 3, BOUND - 1, BOUND, 10 * BOUND])
def test_a_count_below_the_bound_is_exact_whatever_the_estimate(exact, estimate):
    assert combine(exact, estimate, bound=BOUND) == Count(exact, estimated=False)


@pytest.mark.parametrize("estimate", [BOUND, BOUND + 1, 10 * BOUND, 123_456_789])
def test_a_count_that_reached_the_bound_takes_the_estimate(estimate):
    assert combine(BOUND, estimate, bound=BOUND) == Count(estimate, estimated=True)


@pytest.mark.parametrize("estimate", [None, 0, 1, BOUND - 1])
def test_an_estimate_below_a_count_that_reached_the_bound_is_raised_to_the_bound(estimate):
    # Statistics lag behind the table: never report fewer rows than were just counted.
    assert combine(BOUND, estimate, bound=BOUND) == Count(BOUND, estimated=True)


def test_a_fractional_estimate_is_rounded():
    assert combine(BOUND, 1234.6, bound=BOUND) == Count(1235, estimated=True)


@pytest.mark.parametrize("exact", [-1, BOUND + 1])
def test_a_count_outside_zero_to_the_bound_is_a_caller_error(exact):
    with pytest.raises(ValueError):
        combine(exact, 5, bound=BOUND)


def test_a_negative_estimate_counts_as_none():
    # reltuples is -1 for a table never vacuumed or analysed.
    assert combine(BOUND, -1, bound=BOUND) == Count(BOUND, estimated=True)


@pytest.mark.parametrize("estimate", [None, -1, 0, 12.4, 10 * BOUND])
def test_without_a_count_the_estimate_stands_alone(estimate):
    expected = max(0, round(estimate or 0))
    assert combine(None, estimate, bound=BOUND) == Count(expected, estimated=True)


LARGE = 10 * BOUND


@pytest.mark.parametrize("estimate", [None, -1, 0, 1, BOUND, LARGE - 1])
@pytest.mark.parametrize("always", [True, False])
def test_a_status_without_a_large_estimate_is_counted(estimate, always):
    assert worth_counting(estimate, always=always, large=LARGE)


@pytest.mark.parametrize("estimate", [LARGE, LARGE + 0.5, 100 * LARGE])
def test_a_status_estimated_large_is_counted_only_if_always_counted(estimate):
    assert worth_counting(estimate, always=True, large=LARGE)
    assert not worth_counting(estimate, always=False, large=LARGE)

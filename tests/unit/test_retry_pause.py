import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy.backoff import FIRST_RETRY_PAUSE, LONGEST_RETRY_PAUSE, pause_after


def test_pauses_double_from_the_first_up_to_the_cap():
    assert [pause_after(n) for n in range(1, 9)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]
    assert pause_after(1) == FIRST_RETRY_PAUSE
    assert pause_after(10**6) == LONGEST_RETRY_PAUSE


def test_first_and_cap_are_the_callers():
    assert [pause_after(n, first=0.4, cap=10.0) for n in range(1, 8)] == [
        0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0]
    assert [pause_after(n, first=0.5, cap=10.0) for n in range(1, 7)] == [
        0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert pause_after(3, first=2.0, cap=2.0) == 2.0


@given(failures=st.integers(min_value=1, max_value=10**9),
       first=st.floats(min_value=1e-6, max_value=100.0),
       factor=st.floats(min_value=1.0, max_value=1e6))
def test_a_pause_grows_with_failures_and_stays_within_first_and_cap(failures, first, factor):
    cap = first * factor
    pause = pause_after(failures, first=first, cap=cap)
    assert first <= pause <= cap
    assert pause <= pause_after(failures + 1, first=first, cap=cap)


@pytest.mark.parametrize(("failures", "first", "cap"), [
    (0, 0.2, 5.0), (-1, 0.2, 5.0), (1, 0.0, 5.0), (1, 6.0, 5.0), (1, 0.2, float("inf"))])
def test_nonsense_is_refused(failures, first, cap):
    with pytest.raises(ValueError):
        pause_after(failures, first=first, cap=cap)

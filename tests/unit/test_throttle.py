"""The duty cycle that keeps retention from crowding out dispatch."""

from __future__ import annotations

import pytest

from service.runtime.throttle import DutyCycle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(("rest", "worked", "expected"), [
    (1.0, 2.0, 2.0), (0.5, 2.0, 1.0), (0.0, 2.0, 0.0), (1.0, 0.0, 0.0), (3.0, 0.25, 0.75),
])
def test_each_pause_rests_in_proportion_to_the_work_since_the_last(rest, worked, expected):
    clock = Clock()
    pause = DutyCycle(rest, clock=clock, sleep=clock.sleep)
    clock.now += worked
    pause()
    assert clock.slept == [pytest.approx(expected)]


def test_the_rest_itself_does_not_count_as_work():
    clock = Clock()
    pause = DutyCycle(1.0, clock=clock, sleep=clock.sleep)
    clock.now += 2.0
    pause()
    clock.now += 0.5
    pause()
    assert clock.slept == [pytest.approx(2.0), pytest.approx(0.5)]


def test_work_before_the_cycle_starts_is_not_counted():
    clock = Clock()
    clock.now += 50.0
    pause = DutyCycle(1.0, clock=clock, sleep=clock.sleep)
    clock.now += 1.0
    pause()
    assert clock.slept == [pytest.approx(1.0)]


def test_a_negative_rest_is_refused():
    with pytest.raises(ValueError):
        DutyCycle(-0.1)

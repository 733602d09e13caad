import pytest

from db.errors import DatabaseUnavailable
from service.runtime import startup


class Clock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def answers(monkeypatch):
    """Script the database: each call of check_reachable takes the next answer."""
    script: list[bool] = []
    calls: list[float] = []

    def check(dsn: str) -> None:
        calls.append(dsn)
        if not script.pop(0):
            raise DatabaseUnavailable("connection refused")

    monkeypatch.setattr(startup, "check_reachable", check)
    return script, calls


def test_a_database_that_answers_at_once_is_used_without_a_pause(answers):
    script, calls = answers
    script.extend([True])
    clock = Clock()
    assert startup.wait_for_database("dsn", 60, sleep=clock.sleep, clock=clock) is True
    assert clock.sleeps == [] and len(calls) == 1


def test_pauses_double_up_to_the_cap_until_the_database_answers(answers):
    script, calls = answers
    script.extend([False] * 7 + [True])
    clock = Clock()
    assert startup.wait_for_database("dsn", 600, sleep=clock.sleep, clock=clock) is True
    assert len(calls) == 8
    assert clock.now == pytest.approx(0.5 + 1 + 2 + 4 + 8 + 10 + 10)
    assert max(clock.sleeps) <= startup.STOP_CHECK + 1e-9


def test_the_wait_gives_up_after_the_timeout_naming_the_setting(answers):
    script, _ = answers
    script.extend([False] * 100)
    clock = Clock()
    with pytest.raises(DatabaseUnavailable, match="WEBHOOKS_STARTUP_TIMEOUT=5s"):
        startup.wait_for_database("dsn", 5, sleep=clock.sleep, clock=clock)
    assert clock.now == pytest.approx(5)  # the last pause is cut to the deadline


def test_a_timeout_of_0_tries_once(answers):
    script, calls = answers
    script.extend([False])
    clock = Clock()
    with pytest.raises(DatabaseUnavailable):
        startup.wait_for_database("dsn", 0, sleep=clock.sleep, clock=clock)
    assert len(calls) == 1 and clock.sleeps == []


def test_a_stop_request_ends_the_wait_within_a_pause(answers):
    script, calls = answers
    script.extend([False] * 100)
    clock = Clock()
    stopped = lambda: clock.now >= 3.05  # noqa: E731  (a SIGTERM 3 s in)
    assert startup.wait_for_database("dsn", 3600, stopped=stopped, sleep=clock.sleep,
                                     clock=clock) is False
    assert clock.now < 3.05 + startup.STOP_CHECK + 1e-9
    assert len(calls) == 3  # at 0, 0.5 and 1.5 s; the next try would have been at 3.5 s

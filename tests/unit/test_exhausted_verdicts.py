"""Which failures are a spent budget (announced as `delivery.exhausted`): the last attempt of a
generation, or one past its retry window, that failed in a way that is retried; not a failure
for good (a 4xx, a refused address), not one with budget left."""

from dataclasses import replace
from datetime import timedelta

import pytest

from db.vocabulary import AttemptOutcome, Status
from service.dispatch.sender import Response
from service.dispatch.verdict import interrupted, interruption, judge
from service.policy.backoff import RetryPolicy
from service.runtime.settings import Settings
from tests.unit.test_circuit_rules import CLAIMED, NOW

POLICY = RetryPolicy.from_settings(Settings.load({}, {"max_attempts": "3",
                                                      "retry_window": "1h"}))


def answer(outcome: str, status_code: int) -> Response:
    return Response(outcome=outcome, status_code=status_code, duration=0.01,
                    error=None if outcome == "success" else "x")


@pytest.mark.parametrize("outcome, status_code", [
    ("http_error", 500), ("http_error", 429), ("timeout", 0), ("network_error", 0)])
def test_a_retried_failure_with_no_attempt_left_is_exhausted(outcome, status_code):
    last = judge(replace(CLAIMED, attempt_count=2), answer(outcome, status_code), POLICY,
                 now=NOW)
    late = judge(CLAIMED, answer(outcome, status_code), POLICY, now=NOW + timedelta(hours=2))
    earlier = judge(replace(CLAIMED, attempt_count=1), answer(outcome, status_code), POLICY,
                    now=NOW)
    assert (last.next_status, last.exhausted) == (Status.FAILED, True)
    assert (late.next_status, late.exhausted) == (Status.FAILED, True)  # the window ran out
    assert (earlier.next_status, earlier.exhausted) == (Status.PENDING, False)


@pytest.mark.parametrize("outcome, status_code", [
    ("http_error", 400), ("http_error", 410), ("http_error", 301),
    (AttemptOutcome.BLOCKED, 0), ("success", 200)])
def test_a_final_answer_is_not_a_spent_budget(outcome, status_code):
    result = judge(replace(CLAIMED, attempt_count=2), answer(outcome, status_code), POLICY,
                   now=NOW)
    assert not result.exhausted


def test_an_interrupted_last_attempt_is_exhausted():
    assert interrupted(replace(CLAIMED, attempt_count=2), interruption(1.0),
                       max_attempts=3).exhausted
    assert not interrupted(CLAIMED, interruption(1.0), max_attempts=3).exhausted

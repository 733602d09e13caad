"""An attempt cut short by a stopping worker: counted, due again at once, within the budget."""

from dataclasses import replace

import pytest

from db.vocabulary import AttemptOutcome, Status, Verdict
from service.dispatch.verdict import interrupted, interruption
from tests.unit.test_circuit_rules import CLAIMED


@pytest.mark.parametrize("made", [0, 5, 13])
def test_within_the_budget_it_is_due_again_now_without_backoff(made):
    result = interrupted(replace(CLAIMED, attempt_count=made), interruption(1.5),
                         max_attempts=15)
    assert (result.attempt_number, result.outcome) == (made + 1, AttemptOutcome.INTERRUPTED)
    assert (result.next_status, result.next_delay) == (Status.PENDING, 0.0)
    assert result.verdict == Verdict.NEUTRAL  # the stop says nothing of the endpoint


def test_the_last_attempt_of_the_budget_fails_the_delivery_saying_why():
    result = interrupted(replace(CLAIMED, attempt_count=14), interruption(1.5),
                         max_attempts=15)
    assert result.attempt_number == 15
    assert (result.next_status, result.next_delay) == (Status.FAILED, None)
    assert "retry budget exhausted: 15 attempts" in result.last_error
    assert result.last_error.startswith(interruption(1.5).error)


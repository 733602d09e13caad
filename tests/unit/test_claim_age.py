"""When a claimed delivery may still be sent: never once its result could be recorded only
after the claim went stale."""

from hypothesis import given
from hypothesis import strategies as st

from service.policy.claim_age import HOLD, RECORD_MARGIN, may_send, shortest_claim_timeout

seconds = st.floats(min_value=0, max_value=10_000, allow_nan=False)


@given(age=seconds, http_timeout=seconds, claim_timeout=seconds)
def test_a_send_may_start_only_if_it_ends_and_is_recorded_before_the_claim_is_stale(
        age, http_timeout, claim_timeout):
    allowed = may_send(age, http_timeout=http_timeout, claim_timeout=claim_timeout)
    assert allowed == (age + http_timeout + RECORD_MARGIN < claim_timeout)


@given(http_timeout=st.floats(min_value=0.001, max_value=3600, allow_nan=False))
def test_with_a_valid_claim_timeout_the_last_claim_held_may_still_be_sent(http_timeout):
    """A claim that waited behind HOLD - 1 full rounds of sends is still sendable once the
    claim timeout is longer than the shortest one."""
    claim_timeout = shortest_claim_timeout(http_timeout) * 1.0001 + 1e-6
    assert may_send((HOLD - 1) * http_timeout, http_timeout=http_timeout,
                    claim_timeout=claim_timeout)
    assert not may_send((HOLD - 1) * http_timeout, http_timeout=http_timeout,
                        claim_timeout=shortest_claim_timeout(http_timeout))

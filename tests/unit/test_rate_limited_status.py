"""When a GraphQL answer is a 429: every error of the request RATE_LIMITED, and then its
Retry-After is the longest retryAfter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graphql_schema.view import retry_after

CODES = ("RATE_LIMITED", "BAD_USER_INPUT", "NOT_FOUND", "UNAVAILABLE")
ERRORS = st.lists(st.tuples(st.sampled_from(CODES), st.floats(0.001, 1000)), max_size=4)


def answer(errors: list[tuple[str, float]]) -> dict:
    formatted = [{"message": "m", "extensions": {"code": code, "retryAfter": seconds}
                  if code == "RATE_LIMITED" else {"code": code}} for code, seconds in errors]
    return {"data": None, "errors": formatted} if errors else {"data": {"x": 1}}


@given(results=st.lists(ERRORS, min_size=1, max_size=3), batch=st.booleans())
def test_a_request_is_rate_limited_when_all_its_errors_are(results, batch):
    data = [answer(errors) for errors in results] if batch else answer(results[0])
    errors = [error for each in (results if batch else results[:1]) for error in each]
    expected = (max(seconds for _, seconds in errors)
                if errors and all(code == "RATE_LIMITED" for code, _ in errors) else None)
    assert retry_after(data) == expected

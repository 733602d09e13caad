"""Turn the response of one attempt into the delivery's next state (rules: docs/delivery.md)."""

from __future__ import annotations

import random
from datetime import datetime

from db.deliveries import AttemptResult, Claimed
from db.vocabulary import AttemptOutcome, Status, Verdict
from service.dispatch.sender import Response
from service.policy.backoff import RetryPolicy, budget_spent, next_step
from service.policy.classify import (
    DEFAULT_RETRYABLE,
    FAIL,
    SUCCEEDED,
    classify,
    is_success,
    parse_retry_after,
)

INTERRUPTION = "interrupted: the worker stopped before the endpoint answered"


def judge(
    claimed: Claimed,
    response: Response,
    policy: RetryPolicy,
    *,
    now: datetime,
    rng: random.Random | None = None,
    retryable: frozenset[int] = DEFAULT_RETRYABLE,
    sent_at: datetime | None = None,
    request_headers: dict[str, str] | None = None,
) -> AttemptResult:
    """Return the attempt to record and the state it moves the delivery to; `now` is when
    the response ended and `sent_at` when the request went out (the database's clock);
    `request_headers` are the request's headers the attempt keeps."""
    attempt_number = claimed.attempt_count + 1
    code = response.status_code
    error = response.error or (None if is_success(code) else f"HTTP {code}")
    delay: float | None = None
    backoff: float | None = None
    exhausted = False
    verdict = Verdict.NEUTRAL  # the endpoint answered for good, or the request never left
    if response.outcome == AttemptOutcome.BLOCKED:
        status, last_error = Status.FAILED, error
    elif (kind := classify(code, retryable)) == SUCCEEDED:
        status, last_error, verdict = Status.SUCCEEDED, None, Verdict.SUCCESS
    elif kind == FAIL:
        status, last_error = Status.FAILED, f"{error}: {_why_permanent(code, retryable)}"
    else:
        verdict = Verdict.FAILURE
        elapsed = (now - claimed.generation_started_at).total_seconds()
        step = next_step(
            policy,
            attempts_made=attempt_number,
            elapsed=max(0.0, elapsed),
            retry_after=parse_retry_after(response.retry_after, now=now),
            previous=claimed.last_backoff,
            rng=rng,
        )
        if step.retry:
            status, delay, last_error = Status.PENDING, step.delay, error
            backoff = step.backoff
        else:
            status, last_error, exhausted = Status.FAILED, f"{error}; {step.reason}", True
    return AttemptResult(
        delivery_id=claimed.id,
        token=claimed.token,
        attempt_number=attempt_number,
        replay_generation=claimed.replay_generation,
        endpoint=claimed.endpoint,
        outcome=response.outcome,
        status_code=code,
        duration_ms=round(response.duration * 1000),
        response_excerpt=response.excerpt,
        error=response.error,
        next_status=status,
        next_delay=delay,
        next_backoff=backoff,
        last_error=last_error,
        verdict=verdict,
        sent_at=sent_at,
        request_headers=request_headers,
        exhausted=exhausted,
    )


def interruption(duration: float) -> Response:
    """Return the response of a send cut short by a stopping worker after `duration` s."""
    return Response(AttemptOutcome.INTERRUPTED, 0, duration, error=INTERRUPTION)


def interrupted(claimed: Claimed, response: Response, *, max_attempts: int) -> AttemptResult:
    """Return the attempt of a send cut short by a stopping worker: counted, and due again now
    while the generation's attempt budget lasts, failed once it is spent.

    The endpoint may have received the request, so the attempt is counted and kept, and it
    uses the budget as any attempt does; the stop is the worker's doing, not the endpoint's,
    so no backoff applies.
    """
    attempt_number = claimed.attempt_count + 1
    spent = attempt_number >= max_attempts
    return AttemptResult(
        delivery_id=claimed.id,
        token=claimed.token,
        attempt_number=attempt_number,
        replay_generation=claimed.replay_generation,
        endpoint=claimed.endpoint,
        outcome=response.outcome,
        status_code=0,
        duration_ms=round(response.duration * 1000),
        response_excerpt=None,
        error=response.error,
        next_status=Status.FAILED if spent else Status.PENDING,
        next_delay=None if spent else 0.0,
        next_backoff=claimed.last_backoff,
        last_error=f"{response.error}; {budget_spent(max_attempts)}" if spent
        else response.error,
        exhausted=spent,
    )


def _why_permanent(code: int, retryable: frozenset[int]) -> str:
    if 300 <= code < 400 and code not in retryable:
        return "redirects are not followed; update the endpoint"
    if retryable == DEFAULT_RETRYABLE:
        return "not retried (only 408, 429, 5xx and network errors are)"
    return "not retried (not in WEBHOOKS_RETRYABLE_STATUS_CODES)"

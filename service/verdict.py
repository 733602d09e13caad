"""Turn the response of one attempt into the delivery's next state (SPEC §3 and §4)."""

from __future__ import annotations

import random
from datetime import datetime

from db.deliveries import AttemptResult, Claimed
from service.backoff import RetryPolicy, next_step
from service.classify import FAIL, SUCCEEDED, classify, parse_retry_after
from service.sender import BLOCKED, Response


def judge(
    claimed: Claimed,
    response: Response,
    policy: RetryPolicy,
    *,
    now: datetime,
    rng: random.Random | None = None,
) -> AttemptResult:
    """Return the attempt to record and the state it moves the delivery to."""
    attempt_number = claimed.attempt_count + 1
    code = response.status_code
    error = response.error or (None if 200 <= code < 300 else f"HTTP {code}")
    delay: float | None = None
    backoff: float | None = None
    if response.outcome == BLOCKED:
        status, last_error = "failed", error
    elif (kind := classify(code)) == SUCCEEDED:
        status, last_error = "succeeded", None
    elif kind == FAIL:
        status, last_error = "failed", f"{error}: {_why_permanent(code)}"
    else:
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
            status, delay, last_error = "pending", step.delay, error
            backoff = step.backoff
        else:
            status, last_error = "failed", f"{error}; {step.reason}"
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
    )


def _why_permanent(code: int) -> str:
    if 300 <= code < 400:
        return "redirects are not followed; update the endpoint"
    return "not retried (only 408, 429, 5xx and network errors are)"

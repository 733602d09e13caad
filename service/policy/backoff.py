"""Decide when a failed delivery is tried again, and when its retry generation ends; and how
long the worker pauses before it retries a failed call to the database or the broker."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from service.policy.durations import format_duration

STRATEGIES = ("exponential", "linear", "fixed")
JITTERS = ("none", "full", "equal", "decorrelated")
FIRST_RETRY_PAUSE = 0.2  # seconds after one failed call to the database or the broker
LONGEST_RETRY_PAUSE = 5.0  # seconds, longest pause between two retries of such a call


def _check(base: float, cap: float, strategy: str, jitter: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown backoff strategy {strategy!r}: use one of {STRATEGIES}")
    if jitter not in JITTERS:
        raise ValueError(f"unknown jitter {jitter!r}: use one of {JITTERS}")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a positive number of seconds, not {base!r}")
    if not (math.isfinite(cap) and cap >= base):
        raise ValueError(f"cap must be a finite number of seconds >= base, not {cap!r}")


def _raw(attempt: int, base: float, cap: float, strategy: str) -> float:
    """Return the un-jittered delay after `attempt`, capped before it can overflow."""
    if strategy == "fixed":
        return base
    if strategy == "linear":
        return cap if attempt >= cap / base else min(cap, base * attempt)
    if attempt - 1 >= math.log2(cap) - math.log2(base):
        return cap
    return min(cap, math.ldexp(base, attempt - 1))


def compute_backoff(
    attempt: int,
    *,
    base: float,
    cap: float,
    strategy: str = "exponential",
    jitter: str = "none",
    previous: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Return the seconds to wait after `attempt` attempts, within [0, cap]."""
    _check(base, cap, strategy, jitter)
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, not {attempt!r}")
    raw = _raw(attempt, base, cap, strategy)
    if jitter == "none":
        return raw
    rng = rng or random.Random()
    if jitter == "full":
        return rng.uniform(0, raw)
    if jitter == "equal":
        return raw / 2 + rng.uniform(0, raw / 2)
    if previous is None:
        previous = base if attempt == 1 else _raw(attempt - 1, base, cap, strategy)
    high = max(base, min(cap, previous * 3))
    return min(high, rng.uniform(base, high))


@dataclass(frozen=True)
class RetryPolicy:
    """The limits of one retry generation; durations in seconds."""

    min_backoff: float = 60.0
    max_backoff: float = 3600.0
    max_attempts: int = 15
    retry_window: float = 36000.0
    retry_after_cap: float = 21600.0
    strategy: str = "exponential"
    jitter: str = "none"

    def __post_init__(self) -> None:
        _check(self.min_backoff, self.max_backoff, self.strategy, self.jitter)
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, not {self.max_attempts!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> RetryPolicy:
        """Build the policy from an object with the service's settings attributes."""
        return cls(
            min_backoff=settings.min_backoff,
            max_backoff=settings.max_backoff,
            max_attempts=settings.max_attempts,
            retry_window=settings.retry_window,
            retry_after_cap=settings.retry_after_cap,
            strategy=settings.backoff_strategy,
            jitter=settings.jitter,
        )


@dataclass(frozen=True)
class NextStep:
    """What to do after a retryable failure: retry after `delay`, or fail for `reason`."""

    retry: bool
    delay: float | None
    reason: str | None
    backoff: float | None = None  # the policy's delay before Retry-After; the next `previous`


def budget_spent(max_attempts: int) -> str:
    """Say why a delivery whose generation made `max_attempts` attempts is not retried."""
    return f"retry budget exhausted: {max_attempts} attempts (WEBHOOKS_MAX_ATTEMPTS)"


def next_step(
    policy: RetryPolicy,
    *,
    attempts_made: int,
    elapsed: float,
    retry_after: float | None = None,
    previous: float | None = None,
    rng: random.Random | None = None,
) -> NextStep:
    """Return whether and when to retry after the generation's latest attempt failed.

    `previous` is the backoff chosen after the attempt before (`NextStep.backoff`), from
    which decorrelated jitter grows; the other algorithms ignore it.
    """
    if attempts_made >= policy.max_attempts:
        return NextStep(retry=False, delay=None, reason=budget_spent(policy.max_attempts))
    delay = compute_backoff(
        attempts_made,
        base=policy.min_backoff,
        cap=policy.max_backoff,
        strategy=policy.strategy,
        jitter=policy.jitter,
        previous=previous,
        rng=rng,
    )
    backoff = delay
    if retry_after is not None and retry_after > delay:
        remaining = policy.retry_window - elapsed
        delay = max(delay, min(retry_after, policy.retry_after_cap, remaining))
    if elapsed + delay > policy.retry_window:
        window = format_duration(policy.retry_window)
        reason = f"retry window of {window} exhausted (WEBHOOKS_RETRY_WINDOW)"
        return NextStep(retry=False, delay=None, reason=reason)
    return NextStep(retry=True, delay=delay, reason=None, backoff=backoff)


def pause_after(failures: int, *, first: float = FIRST_RETRY_PAUSE,
                cap: float = LONGEST_RETRY_PAUSE) -> float:
    """Return the seconds to pause after `failures` (1 or more) failed calls in a row: `first`,
    doubling with each further failure, at most `cap`."""
    if failures < 1:
        raise ValueError(f"failures must be >= 1, not {failures!r}")
    if not (0 < first <= cap and math.isfinite(cap)):
        raise ValueError(f"need 0 < first <= cap, finite; not first={first!r}, cap={cap!r}")
    if failures - 1 >= math.log2(cap / first):
        return cap
    return min(cap, math.ldexp(first, failures - 1))

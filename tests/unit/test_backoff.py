import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.policy.backoff import (
    JITTERS,
    STRATEGIES,
    NextStep,
    RetryPolicy,
    compute_backoff,
    next_step,
)
from service.runtime.settings import Settings

MIN = 60.0


def _schedule(policy: RetryPolicy, retry_after: float | None = None) -> tuple[list[float], str]:
    """Return the attempt times of a generation whose every attempt fails, and why it ended."""
    times = [0.0]
    while True:
        step = next_step(policy, attempts_made=len(times), elapsed=times[-1],
                         retry_after=retry_after)
        if not step.retry:
            assert step.delay is None
            return times, step.reason
        assert step.reason is None
        times.append(times[-1] + step.delay)


def test_default_schedule_matches_spec_row_by_row():
    times, reason = _schedule(RetryPolicy())
    minutes = [0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303, 363, 423, 483, 543]
    assert [t / MIN for t in times] == minutes
    assert len(times) == 15
    assert times[-1] == 9 * 3600 + 3 * 60
    assert reason == "retry budget exhausted: 15 attempts (WEBHOOKS_MAX_ATTEMPTS)"


def test_default_policy_matches_default_settings():
    assert RetryPolicy.from_settings(Settings.load({})) == RetryPolicy()


def test_from_settings_reads_every_attribute():
    source = SimpleNamespace(min_backoff=1.0, max_backoff=8.0, max_attempts=3, retry_window=99.0,
                             retry_after_cap=30.0, backoff_strategy="linear", jitter="full")
    assert RetryPolicy.from_settings(source) == RetryPolicy(
        min_backoff=1.0, max_backoff=8.0, max_attempts=3, retry_window=99.0,
        retry_after_cap=30.0, strategy="linear", jitter="full",
    )


@pytest.mark.parametrize(
    "changes",
    [{"strategy": "random"}, {"jitter": "lots"}, {"min_backoff": 0}, {"max_backoff": 30},
     {"max_attempts": 0}, {"min_backoff": float("nan")}, {"max_backoff": float("inf")}],
)
def test_policy_rejects_impossible_values(changes):
    with pytest.raises(ValueError):
        RetryPolicy(**changes)


def test_small_window_ends_the_generation_by_window():
    times, reason = _schedule(RetryPolicy(retry_window=20 * MIN))
    assert [t / MIN for t in times] == [0, 1, 3, 7, 15]
    assert reason == "retry window of 20m exhausted (WEBHOOKS_RETRY_WINDOW)"


def test_window_reason_names_the_default_window():
    step = next_step(RetryPolicy(), attempts_made=3, elapsed=35999.0)
    assert step == NextStep(retry=False, delay=None,
                            reason="retry window of 10h exhausted (WEBHOOKS_RETRY_WINDOW)")


@pytest.mark.parametrize(
    ("window", "text"),
    [(5430, "1h30m30s"), (32580, "9h3m"), (93600, "1d2h"), (1.5, "1.5s"), (45, "45s")],
)
def test_window_reason_formats_durations_compactly(window, text):
    policy = RetryPolicy(min_backoff=1.0, max_backoff=1.0, retry_window=window)
    step = next_step(policy, attempts_made=1, elapsed=window)
    assert step.reason == f"retry window of {text} exhausted (WEBHOOKS_RETRY_WINDOW)"


def test_delay_landing_exactly_on_the_window_still_retries():
    step = next_step(RetryPolicy(), attempts_made=1, elapsed=36000 - 60)
    assert step == NextStep(True, 60, None, backoff=60)
    assert not next_step(RetryPolicy(), attempts_made=1, elapsed=36000 - 59).retry


def test_budget_counts_the_attempt_that_just_failed():
    policy = RetryPolicy(max_attempts=2)
    assert next_step(policy, attempts_made=1, elapsed=0).retry
    step = next_step(policy, attempts_made=2, elapsed=60)
    assert step.reason == "retry budget exhausted: 2 attempts (WEBHOOKS_MAX_ATTEMPTS)"


def test_budget_wins_over_window_when_both_are_spent():
    step = next_step(RetryPolicy(), attempts_made=15, elapsed=10 * 3600)
    assert "WEBHOOKS_MAX_ATTEMPTS" in step.reason


@pytest.mark.parametrize(
    ("attempts_made", "elapsed", "retry_after", "delay"),
    [
        (1, 0, 600, 600),  # longer than backoff: used
        (1, 0, 30, 60),  # shorter than backoff: ignored
        (1, 0, 60, 60),  # equal: backoff
        (1, 0, 86400, 21600),  # capped at retry_after_cap
        (2, 8 * 3600, 21600, 2 * 3600),  # clamped to the window's end
        (6, 9 * 3600, 7200, 3600),  # clamped to the window's end, still above backoff
    ],
)
def test_retry_after(attempts_made, elapsed, retry_after, delay):
    step = next_step(RetryPolicy(), attempts_made=attempts_made, elapsed=elapsed,
                     retry_after=retry_after)
    backoff = compute_backoff(attempts_made, base=60, cap=3600)
    assert step == NextStep(retry=True, delay=delay, reason=None, backoff=backoff)


def test_retry_after_does_not_save_a_backoff_past_the_window():
    step = next_step(RetryPolicy(), attempts_made=6, elapsed=9.5 * 3600, retry_after=7200)
    assert not step.retry
    assert "WEBHOOKS_RETRY_WINDOW" in step.reason


def test_retry_after_cap_shorter_than_backoff_keeps_backoff():
    policy = RetryPolicy(retry_after_cap=30)
    assert next_step(policy, attempts_made=1, elapsed=0, retry_after=600).delay == 60


def test_infinite_retry_after_is_capped():
    step = next_step(RetryPolicy(), attempts_made=1, elapsed=0, retry_after=float("inf"))
    assert step.delay == 21600


def test_constant_retry_after_paces_the_generation():
    times, reason = _schedule(RetryPolicy(), retry_after=3 * 3600)
    assert [t / 3600 for t in times] == [0, 3, 6, 9, 10]
    assert "WEBHOOKS_RETRY_WINDOW" in reason


def test_decorrelated_jitter_grows_from_the_backoff_carried_forward():
    """Decorrelated jitter: Delay = random(initial, min(max, previousDelay * 3)), chained."""
    policy = RetryPolicy(jitter="decorrelated")
    rng = random.Random(3)
    previous, chain = None, []
    for attempts_made in range(1, 12):
        step = next_step(policy, attempts_made=attempts_made, elapsed=0, previous=previous,
                         rng=rng)
        high = min(3600.0, 3 * (previous if previous is not None else 60.0))
        assert 60.0 <= step.delay <= max(60.0, high)
        assert step.backoff == step.delay
        previous = step.backoff
        chain.append(step.delay)
    assert len(set(chain)) == len(chain)  # random, not the un-jittered ladder
    assert next_step(policy, attempts_made=5, elapsed=0, previous=60.0,
                     rng=random.Random(1)).delay <= 180.0  # bounded by the carried value


def test_the_carried_backoff_is_the_policy_delay_not_the_retry_after():
    step = next_step(RetryPolicy(), attempts_made=1, elapsed=0, retry_after=600)
    assert (step.delay, step.backoff) == (600, 60)


def test_next_step_passes_jitter_and_rng_through():
    policy = RetryPolicy(jitter="full")
    delays = {next_step(policy, attempts_made=3, elapsed=0, rng=random.Random(seed)).delay
              for seed in range(20)}
    assert len(delays) == 20
    assert all(0 <= delay <= 240 for delay in delays)
    again = next_step(policy, attempts_made=3, elapsed=0, rng=random.Random(7))
    assert again == next_step(policy, attempts_made=3, elapsed=0, rng=random.Random(7))


@pytest.mark.parametrize(
    ("strategy", "delays"),
    [
        ("exponential", [1, 2, 4, 8, 16, 32, 60, 60, 60]),
        ("linear", [1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ("fixed", [1, 1, 1, 1, 1, 1, 1, 1, 1]),
    ],
)
def test_strategy_table_in_minutes(strategy, delays):
    computed = [compute_backoff(n, base=MIN, cap=3600, strategy=strategy) / MIN
                for n in range(1, 10)]
    assert computed == delays


def test_linear_is_capped():
    delays = [compute_backoff(n, base=10, cap=35, strategy="linear") for n in (3, 4, 5)]
    assert delays == [30, 35, 35]


def test_huge_attempts_are_capped_without_overflow():
    for strategy in STRATEGIES:
        for attempt in (10_000, 10**30):
            expected = 60 if strategy == "fixed" else 3600
            assert compute_backoff(attempt, base=60, cap=3600, strategy=strategy) == expected
    assert compute_backoff(3000, base=5e-324, cap=1e308) == 1e308
    assert compute_backoff(1000, base=5e-324, cap=1e308) == 2.0**999 * 5e-324


def test_cap_equal_to_base_is_fixed():
    assert {compute_backoff(n, base=5, cap=5) for n in range(1, 50)} == {5}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attempt": 0},
        {"attempt": -1},
        {"strategy": "random"},
        {"jitter": "lots"},
        {"base": 0},
        {"base": -1},
        {"cap": 59},
        {"base": float("nan")},
        {"cap": float("inf")},
    ],
)
def test_compute_backoff_rejects_bad_arguments(kwargs):
    arguments = {"attempt": 1, "base": 60.0, "cap": 3600.0, **kwargs}
    with pytest.raises(ValueError):
        compute_backoff(**arguments)


class _Fixed(random.Random):
    """An rng whose uniform(a, b) returns the point `fraction` of the way from a to b."""

    def __init__(self, fraction: float) -> None:
        super().__init__(0)
        self.fraction = fraction
        self.calls: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.calls.append((a, b))
        return a + (b - a) * self.fraction


@pytest.mark.parametrize(
    ("jitter", "attempt", "previous", "bounds", "low_end", "high_end"),
    [
        ("full", 3, None, (0, 240), 0, 240),
        ("full", 9, None, (0, 3600), 0, 3600),
        ("equal", 3, None, (0, 120), 120, 240),
        ("equal", 9, None, (0, 1800), 1800, 3600),
        ("decorrelated", 1, None, (60, 180), 60, 180),  # prev = base
        ("decorrelated", 3, None, (60, 360), 60, 360),  # prev = raw of attempt 2 (120)
        ("decorrelated", 9, None, (60, 3600), 60, 3600),  # prev * 3 capped
        ("decorrelated", 3, 1000.0, (60, 3000), 60, 3000),  # given prev wins
        ("decorrelated", 3, 10.0, (60, 60), 60, 60),  # low <= high kept
        ("decorrelated", 3, 5000.0, (60, 3600), 60, 3600),
    ],
)
def test_jitter_ranges(jitter, attempt, previous, bounds, low_end, high_end):
    delays = []
    for fraction in (0.0, 1.0):
        rng = _Fixed(fraction)
        delays.append(compute_backoff(attempt, base=60, cap=3600, jitter=jitter,
                                      previous=previous, rng=rng))
        assert rng.calls == [bounds]
    assert delays == [low_end, high_end]


def test_no_jitter_draws_nothing():
    rng = _Fixed(0.5)
    assert compute_backoff(4, base=60, cap=3600, rng=rng) == 480
    assert rng.calls == []


def test_jitter_without_rng_still_randomises():
    delays = {compute_backoff(5, base=60, cap=3600, jitter="full") for _ in range(10)}
    assert len(delays) > 1
    assert all(0 <= delay <= 960 for delay in delays)


@settings(max_examples=300, deadline=None)
@given(
    attempt=st.one_of(st.integers(1, 100), st.sampled_from([10_000, 10**9])),
    base=st.floats(0.001, 1e6),
    ratio=st.floats(1, 1e6),
    strategy=st.sampled_from(STRATEGIES),
    jitter=st.sampled_from(JITTERS),
    previous=st.one_of(st.none(), st.floats(0, 1e12)),
    seed=st.integers(0, 2**32),
)
def test_delay_is_always_within_cap(attempt, base, ratio, strategy, jitter, previous, seed):
    cap = base * ratio
    delay = compute_backoff(attempt, base=base, cap=cap, strategy=strategy, jitter=jitter,
                            previous=previous, rng=random.Random(seed))
    assert 0 <= delay <= cap
    if jitter == "decorrelated":
        assert delay >= base
    if jitter == "none":
        assert delay >= base


@settings(max_examples=100, deadline=None)
@given(base=st.floats(0.001, 1e4), ratio=st.floats(1, 1e6), strategy=st.sampled_from(STRATEGIES))
def test_without_jitter_delays_never_shrink(base, ratio, strategy):
    delays = [compute_backoff(n, base=base, cap=base * ratio, strategy=strategy)
              for n in range(1, 80)]
    assert delays == sorted(delays)
    last = compute_backoff(10**9, base=base, cap=base * ratio, strategy=strategy)
    assert delays[-1] <= last == (base if strategy == "fixed" else base * ratio)


@settings(max_examples=100, deadline=None)
@given(attempts=st.integers(1, 14), elapsed=st.floats(0, 40000),
       retry_after=st.one_of(st.none(), st.floats(0, 1e6)))
def test_next_step_never_leaves_the_window_nor_undercuts_backoff(attempts, elapsed, retry_after):
    policy = RetryPolicy()
    step = next_step(policy, attempts_made=attempts, elapsed=elapsed, retry_after=retry_after)
    backoff = compute_backoff(attempts, base=60, cap=3600)
    if step.retry:
        assert backoff <= step.delay <= max(backoff, policy.retry_after_cap)
        assert elapsed + step.delay <= policy.retry_window
    else:
        assert elapsed + backoff > policy.retry_window

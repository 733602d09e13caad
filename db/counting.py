"""Counts that stay cheap on any table size: exact up to a bound, else the planner's estimate."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Count:
    value: int
    estimated: bool


def worth_counting(estimate: float | None, *, always: bool, large: int) -> bool:
    """Tell whether to count exactly (up to a bound) rather than trust the estimate alone.

    Counted: what is `always` counted (the work queue, whose count must follow it closely),
    what has no estimate, and what the estimate puts below `large`. A status estimated at
    `large` or more is not counted: counting up to the bound would only confirm it is big.
    """
    return always or estimate is None or estimate < large


def combine(exact: int | None, estimate: float | None, *, bound: int) -> Count:
    """Return `exact` if it stopped short of `bound`, else the estimate (at least `bound`).

    `exact` is a count that stops at `bound`, or None when it was not made; `estimate`
    comes from table statistics (None or negative when there are none).
    """
    if exact is None:
        return Count(max(0, round(estimate or 0)), estimated=True)
    if not 0 <= exact <= bound:
        raise ValueError(f"exact count {exact} outside 0..{bound}")
    if exact < bound:
        return Count(exact, estimated=False)
    return Count(max(bound, round(estimate or 0)), estimated=True)

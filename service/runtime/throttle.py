"""A duty cycle for background work: rest in proportion to the time just spent working."""

from __future__ import annotations

import time
from collections.abc import Callable


class DutyCycle:
    """A pause to call between units of work: it sleeps `rest` times the work since the last.

    With `rest` 1.0 the work gets at most half of the time, whatever the machine's speed.
    """

    def __init__(self, rest: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] | None = None) -> None:
        if rest < 0:
            raise ValueError(f"rest must not be negative, not {rest}")
        self.rest = rest
        self._clock = clock
        self._sleep = sleep or time.sleep  # looked up now: gevent's, once patched
        self._since = clock()

    def __call__(self) -> None:
        """Rest after the work done since the last call (or since the cycle began)."""
        worked = self._clock() - self._since
        self._sleep(worked * self.rest)
        self._since = self._clock()

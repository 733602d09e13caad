"""Spacing one worker's sends of a rate-limited config, whenever its claims arrive.

A claim takes a config's rate slots in the database, so the rate holds across workers as long
as each delivery is sent when it was claimed. Deliveries that waited in a worker (behind their
config's sends in flight) would otherwise all go out together once a send slot frees. The
pacer starts each send of a config no sooner than 1/rate seconds after the worker's previous
one: a worker never sends a config faster than its rate, however its claims queued.

Pure: the caller passes the monotonic time.
"""

from __future__ import annotations

import math

PRUNE_FROM = 64  # entries kept before the first pruning


class Pacer:
    """When each send of a rate-limited config may start in this worker."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}  # config -> (start, interval)
        self._prune_at = PRUNE_FROM  # entries at which the next pruning happens

    def wait(self, config_id: str, rate: float | None, now: float) -> float:
        """Return how many seconds a send of `config_id` starting now would have to wait
        (0 without a rate); reserves nothing."""
        if rate is None:
            return 0.0
        last, _ = self._last.get(config_id, (-math.inf, 0.0))
        return max(0.0, last + 1.0 / rate - now)

    def reserve(self, config_id: str, rate: float | None, now: float) -> float:
        """Count a send of `config_id` as starting after `wait(...)` seconds; return them."""
        wait = self.wait(config_id, rate, now)
        if rate is not None:
            self._last[config_id] = (now + wait, 1.0 / rate)
            self._forget(now)
        return wait

    def _forget(self, now: float) -> None:
        """Drop the configs whose next send could start now anyway, once the entries have
        doubled since the last time: a pass over them costs little per send."""
        if len(self._last) < self._prune_at:
            return
        self._last = {config_id: (start, interval)
                      for config_id, (start, interval) in self._last.items()
                      if start + interval > now}
        self._prune_at = max(PRUNE_FROM, 2 * len(self._last))

"""Wait for the database at start: a worker may come up before PostgreSQL does."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import gevent

from db.errors import DatabaseUnavailable
from db.pool import check_reachable
from service.policy.backoff import pause_after
from service.policy.durations import format_duration

FIRST_PAUSE = 0.5  # seconds before the second try; each pause doubles
LONGEST_PAUSE = 10.0  # seconds between two tries, at most
STOP_CHECK = 0.1  # seconds between two looks at `stopped` during a pause

log = logging.getLogger("webhooks.startup")


def wait_for_database(dsn: str, timeout: float, *,
                      stopped: Callable[[], bool] = lambda: False,
                      sleep: Callable[[float], object] = gevent.sleep,
                      clock: Callable[[], float] = time.monotonic) -> bool:
    """Return True once the database answers, False as soon as `stopped()` (a SIGTERM).

    Each failed try is logged on one line (no traceback); once `timeout` seconds have passed
    without an answer, raise DatabaseUnavailable.
    """
    deadline = clock() + timeout
    failures = 0
    while not stopped():
        try:
            check_reachable(dsn)
            return True
        except DatabaseUnavailable as error:
            failures += 1
            left = deadline - clock()
            if left <= 0:
                raise DatabaseUnavailable(
                    f"{error} (gave up after WEBHOOKS_STARTUP_TIMEOUT="
                    f"{format_duration(timeout)})") from None
            wait = min(pause_after(failures, first=FIRST_PAUSE, cap=LONGEST_PAUSE), left)
            log.warning("database unreachable; retrying",
                        extra={"error": str(error), "retry_in_seconds": round(wait, 1)})
            resume = clock() + wait
            while not stopped() and (now := clock()) < resume:
                sleep(min(STOP_CHECK, resume - now))
    return False

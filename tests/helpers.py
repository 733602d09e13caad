"""Small helpers shared by integration tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import gevent

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 10.0, interval: float = 0.02) -> T:
    """Return the first truthy result of `check`, failing the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last: {result!r})")
        gevent.sleep(interval)

"""Small helpers shared by integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
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


def worker_process(database_url: str, **env: object) -> subprocess.Popen:
    """Start `python -m service worker` on `database_url` with extra environment `env`."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true",
        "WEBHOOKS_METRICS_PORT": "0",
        "WEBHOOKS_LOG_LEVEL": "warning",
        **{key: str(value) for key, value in env.items()},
    }
    return subprocess.Popen([sys.executable, "-m", "service", "worker"], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

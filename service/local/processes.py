"""Processes the reliability runs (tests/reliability) and the benchmarks (bench/) start on
127.0.0.1, and the machine they ran on."""

from __future__ import annotations

import os
import platform
import signal
from pathlib import Path

import gevent
import gevent.event
from gevent.server import StreamServer

ROOT = Path(__file__).resolve().parents[2]  # the repository: the processes' working folder


def worker_environment(dsn: str, **settings: str) -> dict[str, str]:
    """Return the environment of a `webhooks worker` on `dsn`: private endpoints allowed, no
    status server, then `settings` (environment variables)."""
    return {
        **os.environ,
        "DATABASE_URL": dsn,
        "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true",
        "WEBHOOKS_METRICS_PORT": "0",
        **settings,
    }


def peak_rss_mb(pid: int) -> float | None:
    """Return the peak resident memory of a live process in MiB (Linux), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def serve_until_sigterm(handle, port: int, *, backlog: int) -> None:
    """Serve `handle` on 127.0.0.1:`port`, print `ready`, and return after SIGTERM."""
    server = StreamServer(("127.0.0.1", port), handle, backlog=backlog)
    server.start()
    print("ready", flush=True)
    stop = gevent.event.Event()
    gevent.signal_handler(signal.SIGTERM, stop.set)
    stop.wait()
    server.stop(timeout=1)


def machine() -> dict:
    """Describe the machine a run measured."""
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}

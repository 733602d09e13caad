"""Small helpers shared by integration tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import gevent
import gevent.util
import psycopg2
import requests

from service.local.ports import reserve_port
from service.local.processes import worker_environment

T = TypeVar("T")

# Seconds any wait for something to happen allows. The machines that run the suite are
# busy: a wait only bounds a hang, it never measures speed (bench/ does that).
PATIENCE = 120.0
PROBE_TIMEOUT = 10.0  # seconds one readiness probe may take before it counts as "not yet"
ROOT = Path(__file__).resolve().parents[1]


def wait_until(check: Callable[[], T], timeout: float = PATIENCE, interval: float = 0.05) -> T:
    """Return the first truthy result of `check`, failing the test after `timeout` seconds.

    An exception from `check` counts as "not yet" (a server still starting, a row not yet
    there); an AssertionError ends the wait at once, as a verdict.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except AssertionError:
            raise
        except Exception as error:
            result = error  # type: ignore[assignment]
        else:
            if result:
                return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last: {result!r})\n"
                                 + our_greenlets())
        gevent.sleep(interval)


def our_greenlets() -> str:
    """Describe where this process's greenlets running our code are blocked: when a wait in
    a test runs out, an in-process worker that stopped making progress shows where."""
    blocks: list[list[str]] = []
    running = False
    for line in "\n".join(gevent.util.format_run_info()).splitlines():
        text = line.lstrip(" :+-")
        if text.startswith(("<Greenlet", "<greenlet")):
            blocks.append([text])
        elif text.startswith(("Running:", "Spawned at:")):
            running = text.startswith("Running:")
        elif blocks and running and text.startswith("File "):
            blocks[-1].append(text)
    ours = [block[:1] + [frame for frame in block[1:] if "/site-packages/" not in frame][-6:]
            for block in blocks if "current active" not in block[0]
            and any(f"/{package}/" in frame for frame in block[1:]
                    for package in ("service", "db", "graphql_schema"))]
    return "greenlets in our code:\n" + ("\n".join("\n  ".join(b) for b in ours) or "(none)")


def wait_for_http(url: str, process: subprocess.Popen | None = None,
                  timeout: float = PATIENCE) -> requests.Response:
    """Return the first 200 response of GET `url`; fail early if `process` has exited."""

    def answered() -> requests.Response | None:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process exited with {process.returncode} before {url} "
                                 "answered")
        response = requests.get(url, timeout=PROBE_TIMEOUT)
        return response if response.status_code == 200 else None

    return wait_until(answered, timeout=timeout, interval=0.1)


@contextlib.contextmanager
def web_process(database_url: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run `webhooks web` with one gevent worker on a free port; yield its base URL and its
    process, stopped (SIGTERM) at the end if it still runs."""
    port = reserve_port()
    env = {**os.environ, "DATABASE_URL": database_url, "WEB_CONCURRENCY": "1",
           "WEBHOOKS_METRICS_PORT": "0"}
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "web", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/healthz", process)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def worker_process(database_url: str, *, program: list[str] | None = None,
                   **env: object) -> subprocess.Popen:
    """Start `python -m service worker` (or `program worker`) on `database_url` with extra
    environment `env`."""
    environment = worker_environment(database_url, WEBHOOKS_LOG_LEVEL="warning",
                                     **{key: str(value) for key, value in env.items()})
    program = program or [sys.executable, "-m", "service"]
    return subprocess.Popen([*program, "worker"], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def worker_metric(worker, name: str, **labels: str) -> float:
    """Return one sample of an in-process worker's Prometheus text (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    for line in worker.telemetry.prometheus_text().decode().splitlines():
        if line.startswith(name + ("{" + wanted + "}" if labels else " ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def plans_as_run(dsn: str, statement: str) -> dict:
    """Run `statement` (rolled back) and return its plan as it ran, with the plans of the
    statements the functions it calls ran (auto_explain, sent back as log messages): what a
    PL/pgSQL function reads is not in the caller's EXPLAIN."""
    connection = psycopg2.connect(dsn)
    try:
        with connection.cursor() as cursor:
            cursor.execute("LOAD 'auto_explain'")
            for setting in ("auto_explain.log_min_duration = 0", "auto_explain.log_analyze = on",
                            "auto_explain.log_nested_statements = on",
                            "auto_explain.log_format = 'json'", "client_min_messages = 'log'"):
                cursor.execute(f"SET {setting}")
            cursor.execute(statement)
        connection.rollback()
        logged = [json.loads(notice.split("plan:", 1)[1]) for notice in connection.notices
                  if "plan:" in notice]
    finally:
        connection.close()
    return {"Plans": [plan["Plan"] for plan in logged]}

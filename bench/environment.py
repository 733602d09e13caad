"""What every benchmark needs on 127.0.0.1: PostgreSQL, a receiver, workers, and a clock."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg2

from db.migrate import migrate
from service.local_postgres import LocalPostgres, free_port, temporary

ROOT = Path(__file__).resolve().parents[1]
EVENT_TYPE = "bench.event"
SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"


@contextlib.contextmanager
def postgres(*, durable: bool = True) -> Iterator[LocalPostgres]:
    """Start an embedded PostgreSQL (fsync on unless `durable` is False) for one run."""
    server = temporary(fast_unsafe=not durable)
    try:
        server.start()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(server.base, ignore_errors=True)


def fresh_database(server: LocalPostgres, name: str) -> str:
    """Create and migrate an empty database; return its DSN."""
    sql(server.dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", autocommit=True)
    sql(server.dsn, f"CREATE DATABASE {name}", autocommit=True)
    dsn = server.dsn.rsplit("/", 1)[0] + "/" + name
    migrate(dsn)
    return dsn


def sql(dsn: str, statement: str, params=None, *, autocommit: bool = False):
    """Run one statement and return its rows (if any)."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = autocommit
    try:
        with conn.cursor() as cursor:
            cursor.execute(statement, params)
            rows = cursor.fetchall() if cursor.description else None
        if not autocommit:
            conn.commit()
        return rows
    finally:
        conn.close()


def add_configs(dsn: str, endpoint: str, count: int = 1, *, event_type: str = EVENT_TYPE) -> None:
    """Subscribe `count` configs to `event_type` at `endpoint`."""
    sql(dsn, "INSERT INTO configs (id, name, endpoint, secret, event_types)"
             " SELECT 'bench-' || g, 'bench', %s, %s, ARRAY[%s] FROM generate_series(1, %s) g",
        (endpoint, SECRET, event_type, count))


def prefill(dsn: str, events: int, *, prefix: str = "evt", due_in: str = "0 seconds",
            event_type: str = EVENT_TYPE) -> None:
    """Insert `events` events with one pending delivery per subscribed config, set-based."""
    sql(dsn, "INSERT INTO events (id, type, payload, occurred_at, source)"
             " SELECT %s || '-' || g, %s, json_build_object('n', g, 'text', repeat('x', 100)),"
             " now(), 'api' FROM generate_series(1, %s) g",
        (prefix, event_type, events))
    sql(dsn, "INSERT INTO deliveries (event_id, config_id, event_type, next_attempt_at)"
             " SELECT e.id, c.id, e.type, now() + %s::interval FROM events e"
             " JOIN configs c ON c.event_types @> ARRAY[e.type]"
             " WHERE e.id LIKE %s || '-%%'",
        (due_in, prefix))
    sql(dsn, "VACUUM ANALYZE deliveries", autocommit=True)
    sql(dsn, "VACUUM ANALYZE events", autocommit=True)


def count(dsn: str, where: str) -> int:
    return sql(dsn, f"SELECT count(*) FROM deliveries WHERE {where}")[0][0]


@contextlib.contextmanager
def receiver(*, record: str | None = None) -> Iterator[str]:
    """Run bench/receiver.py in its own process; yield its URL."""
    port = free_port()
    command = [sys.executable, "-m", "bench.receiver", "--port", str(port)]
    if record:
        command += ["--record", record]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def worker_environment(dsn: str, **settings: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": dsn,
        "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true",
        "WEBHOOKS_METRICS_PORT": "0",
        **settings,
    }


@contextlib.contextmanager
def workers(dsn: str, count: int = 1, **settings: str) -> Iterator[list[subprocess.Popen]]:
    """Run `count` `webhooks worker` processes (JSON logs to files); stop them warmly."""
    env = worker_environment(dsn, **settings)
    logs = Path(tempfile.mkdtemp(prefix="webhooks-bench-logs-"))
    processes = [subprocess.Popen([sys.executable, "-m", "service", "worker"], cwd=ROOT, env=env,
                                  stderr=(logs / f"worker-{n}.log").open("w"))
                 for n in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


def peak_rss_mb(pid: int) -> float | None:
    """Return the peak resident memory of a live process in MiB (Linux), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def wait_for(dsn: str, where: str, target: int, *, timeout: float) -> tuple[float, int]:
    """Poll until `target` deliveries match `where`; return (seconds, count reached)."""
    started = time.monotonic()
    reached = 0
    while time.monotonic() - started < timeout:
        reached = count(dsn, where)
        if reached >= target:
            break
        time.sleep(0.2)
    return time.monotonic() - started, reached


def rate_between(dsn: str, where: str, target: int, *, timeout: float,
                 warmup: int) -> dict:
    """Measure deliveries/s matching `where` between `warmup` and `target` (or the timeout)."""
    started = time.monotonic()
    _, first = wait_for(dsn, where, warmup, timeout=timeout)
    t0 = time.monotonic()
    remaining = max(0.0, timeout - (t0 - started))
    _, last = wait_for(dsn, where, target, timeout=remaining)
    elapsed = time.monotonic() - t0
    return {"deliveries": last - first, "seconds": round(elapsed, 3),
            "per_second": round((last - first) / elapsed, 1) if elapsed else 0.0}


def dumps(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True)

"""What every benchmark needs on 127.0.0.1: configs and a backlog, a receiver, workers, and a
clock (the database and process helpers it shares with the tests are in db/adhoc.py and
service/local/)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from db.adhoc import count_deliveries, sql
from service.local.ports import reserve_port
from service.local.processes import ROOT, worker_environment

EVENT_TYPE = "bench.event"
SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"


def add_configs(dsn: str, endpoint: str, count: int = 1, *, event_type: str = EVENT_TYPE,
                prefix: str = "bench") -> None:
    """Subscribe `count` configs (ids `prefix-1` ...) to `event_type` at `endpoint`."""
    sql(dsn, "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types)"
             " SELECT 1, %s || '-' || g, 'bench', %s, %s, ARRAY[%s] FROM generate_series(1, %s) g",
        (prefix, endpoint, SECRET, event_type, count))


def prefill(dsn: str, events: int, *, prefix: str = "evt", due_in: str = "0 seconds",
            event_type: str = EVENT_TYPE, tenant_id: int = 1) -> None:
    """Insert `events` events of tenant `tenant_id` with one pending delivery per subscribed
    config of that tenant, set-based."""
    sql(dsn, "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source)"
             " SELECT %s, %s || '-' || g, %s,"
             " json_build_object('n', g, 'text', repeat('x', 100)), now(), 'api'"
             " FROM generate_series(1, %s) g",
        (tenant_id, prefix, event_type, events))
    sql(dsn, "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, next_attempt_at)"
             " SELECT e.tenant_id, e.id, c.id, e.type, now() + %s::interval FROM events e"
             " JOIN configs c ON c.event_types @> ARRAY[e.type] AND c.tenant_id = e.tenant_id"
             " WHERE e.tenant_id = %s AND e.id LIKE %s || '-%%'",
        (due_in, tenant_id, prefix))
    sql(dsn, "VACUUM ANALYZE deliveries", autocommit=True)
    sql(dsn, "VACUUM ANALYZE events", autocommit=True)


@contextlib.contextmanager
def receiver(*, record: str | None = None, delay: float = 0.0,
             hang: bool = False) -> Iterator[str]:
    """Run bench/receiver.py in its own process (answering after `delay` seconds, or never
    when `hang`); yield its URL."""
    port = reserve_port()
    command = [sys.executable, "-m", "bench.receiver", "--port", str(port)]
    if record:
        command += ["--record", record]
    if delay:
        command += ["--delay", str(delay)]
    if hang:
        command.append("--hang")
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


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


def wait_for(dsn: str, where: str, target: int, *, timeout: float,
             interval: float = 0.2) -> tuple[float, int]:
    """Poll every `interval` seconds until `target` deliveries match `where`; return
    (seconds, count reached)."""
    started = time.monotonic()
    reached = 0
    while time.monotonic() - started < timeout:
        reached = count_deliveries(dsn, where)
        if reached >= target:
            break
        time.sleep(interval)
    return time.monotonic() - started, reached


def rate_between(dsn: str, where: str, target: int, *, timeout: float,
                 warmup: int, processes: Sequence[subprocess.Popen] = (),
                 interval: float = 0.2) -> dict:
    """Measure deliveries/s matching `where` between `warmup` and `target` (or the timeout),
    and the CPU time that `processes` spent per delivery meanwhile (`cpu_ms_per_delivery`):
    a steadier measure than the rate on a shared host, whose speed drifts between runs.
    Counted every `interval` seconds: the rate is the counts' difference over the time
    between them, whatever the interval, and a count costs the database more the more
    deliveries there are, so a long interval keeps that cost out of large runs."""
    started = time.monotonic()
    _, first = wait_for(dsn, where, warmup, timeout=timeout, interval=interval)
    t0 = time.monotonic()
    cpu0 = sum(cpu_seconds(p.pid) for p in processes)
    remaining = max(0.0, timeout - (t0 - started))
    _, last = wait_for(dsn, where, target, timeout=remaining, interval=interval)
    elapsed = time.monotonic() - t0
    cpu = sum(cpu_seconds(p.pid) for p in processes) - cpu0
    done = last - first
    result = {"deliveries": done, "seconds": round(elapsed, 3),
              "per_second": round(done / elapsed, 1) if elapsed else 0.0}
    if processes and done:
        result["cpu_ms_per_delivery"] = round(cpu / done * 1000, 3)
    return result


def cpu_seconds(pid: int) -> float:
    """Return the CPU time (user and system) a live process has used so far (Linux), or 0."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def statement_stats(pg) -> None:
    """Load pg_stat_statements into the server (a restart): each statement's calls, time and
    rows, read with SQL. Each database that reads them creates the extension."""
    sql(pg.dsn, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'",
        autocommit=True)
    sql(pg.dsn, "ALTER SYSTEM SET pg_stat_statements.track = 'all'", autocommit=True)
    pg.stop()
    pg.start()


def numbers(minimum: int):
    """Return an argparse type: numbers separated by /, each at least `minimum`."""
    def parse(text: str) -> list[int]:
        try:
            values = [int(part.replace("_", "").replace(",", "")) for part in text.split("/")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
        if not values or any(value < minimum for value in values):
            raise argparse.ArgumentTypeError(f"each value must be {minimum} or more")
        return values
    return parse


def target_lines(targets: list[dict]) -> list[str]:
    """Return a line for each of a run's targets: met or MISSED, what it is, the value."""
    return [f"{'met ' if target['met'] else 'MISSED'} {target['target']}: {target['value']}"
            for target in targets]


def parts(known: tuple[str, ...]):
    """Return an argparse type: names separated by /, each one of `known`."""
    def parse(text: str) -> list[str]:
        chosen = text.split("/")
        unknown = set(chosen) - set(known)
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown part(s): {', '.join(sorted(unknown))}; "
                                             f"the parts are {', '.join(known)}")
        return chosen
    return parse


def api_token(dsn: str, role: str, prefix: str) -> str:
    """Create an API token of `role` on the database at `dsn` (named `prefix` and a unique
    suffix); return it."""
    from db import tokens
    from db.pool import ConnectionPool

    pool = ConnectionPool(dsn, size=1)
    try:
        return tokens.create(pool, name=f"{prefix}-{time.time_ns()}", tenant_id=None, role=role)[1]
    finally:
        pool.close()


def dumps(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


def checked_targets(targets, value_of) -> list[dict]:
    """Return each (name, place, comparison, target) that `value_of(place)` finds, met or not."""
    checked = []
    for name, place, comparison, target in targets:
        value = value_of(place)
        if value is None:
            continue
        met = value >= target if comparison == ">=" else value <= target
        checked.append({"target": name, "value": value, "met": met})
    return checked


def progress(text: str) -> None:
    """Say how a long run is going, on stderr (stdout holds the table)."""
    print(text, file=sys.stderr, flush=True)


def report(results: dict, table: str, output: Path) -> int:
    """Print `table`, write `results` as JSON to `output`; return the exit code, 0."""
    print(table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, default=str))
    progress(f"results written to {output}")
    return 0

"""The processes of a chaos run: the flaky receiver and `webhooks worker`s that can be killed.

Workers are real `python -m service worker` processes run from the repository, each with
its output in a log file of the run's folder (a pipe nobody reads would block a worker
that logs a lot during an outage).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from psycopg2.extensions import parse_dsn

from db.adhoc import sql
from service.local.ports import reserve_port
from service.local.processes import ROOT, peak_rss_mb, worker_environment
from tests.helpers import PATIENCE
from tests.reliability.evidence import Kill

STOP_TIMEOUT = PATIENCE  # seconds a warmly stopped process may take before it is killed
READY_TIMEOUT = PATIENCE  # seconds a worker may take to answer /healthz after it is started


@dataclass
class Receiver:
    """tests/reliability/receiver.py in its own process; `records()` once it is stopped."""

    workdir: Path
    seed: int
    fail_rate: float
    port: int = 0
    _process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @property
    def record_path(self) -> Path:
        return self.workdir / "receiver.jsonl"

    def start(self) -> None:
        self.port = reserve_port()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.receiver", "--port", str(self.port),
             "--record", str(self.record_path), "--seed", str(self.seed),
             "--fail-rate", str(self.fail_rate)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = self._process.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the chaos receiver did not start (said {line!r})")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            self._process.wait(STOP_TIMEOUT)

    def records(self) -> list[dict]:
        """Return every request the receiver read, in arrival order."""
        if not self.record_path.exists():
            return []
        with self.record_path.open() as lines:
            return [json.loads(line) for line in lines if line.strip()]


@dataclass
class Workers:
    """`count` worker processes on `dsn` with `settings` (environment variables)."""

    dsn: str
    workdir: Path
    settings: dict[str, str]
    count: int = 2
    command: tuple[str, ...] = ("-m", "service", "worker")  # run by this Python
    processes: list[subprocess.Popen] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    exited: dict[int, int] = field(default_factory=dict)  # pid -> exit code, unexpected exits
    _started: int = 0
    _ports: dict[int, int] = field(default_factory=dict)  # pid -> its /healthz port

    def start(self) -> None:
        """Start the workers and wait until each one runs (answers /healthz)."""
        self.processes = [self._spawn() for _ in range(self.count)]
        for process in self.processes:
            self._wait_ready(process)

    def kill_and_restart(self, index: int) -> Kill:
        """SIGKILL worker `index`, note the claims it held, and start a new one in its place."""
        victim = self.processes[index]
        ports = _ports_to(victim.pid, int(parse_dsn(self.dsn).get("port", 5432)))
        victim.send_signal(signal.SIGKILL)
        victim.wait(STOP_TIMEOUT)
        dead_at = time.time()
        # A COMMIT sent just before the kill may still be applied: wait until PostgreSQL has
        # ended the dead worker's sessions before looking at what it held.
        self._wait_sessions_ended(ports, dead_at)
        kill = Kill(at=dead_at, pid=victim.pid, held=self._claims_of(victim.pid))
        self.kills.append(kill)
        self.processes[index] = self._spawn()
        self._wait_ready(self.processes[index])
        return kill

    def alive(self) -> list[int]:
        """Return the pids still running; remember any that exited on their own."""
        for process in self.processes:
            code = process.poll()
            if code is not None:
                self.exited.setdefault(process.pid, code)
        return [p.pid for p in self.processes if p.poll() is None]

    def stop(self) -> dict[int, int | None]:
        """Stop every worker warmly (SIGTERM); return each pid's exit code."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes: dict[int, int | None] = {}
        for process in self.processes:
            try:
                codes[process.pid] = process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[process.pid] = None
        return codes

    def peak_rss_mb(self) -> float:
        """Return the highest peak resident memory of the running workers, in MiB."""
        return max((peak_rss_mb(pid) or 0.0 for pid in self.alive()), default=0.0)

    def logged(self, text: str) -> int:
        """Return how many lines of all the workers' logs contain `text`."""
        return sum(line.count(text) for path in sorted(self.workdir.glob("worker-*.log"))
                   for line in path.read_text(errors="replace").splitlines())

    def recovered(self) -> int:
        """Return how many stale claims the workers' sweeps recovered (from their logs)."""
        total = 0
        for path in sorted(self.workdir.glob("worker-*.log")):
            for line in path.read_text(errors="replace").splitlines():
                if '"recovered stale claims"' in line:
                    total += json.loads(line).get("recovered", 0)
        return total

    def _spawn(self) -> subprocess.Popen:
        self._started += 1
        port = reserve_port()
        log = (self.workdir / f"worker-{self._started}.log").open("wb")
        with log:
            process = subprocess.Popen(
                [sys.executable, *self.command], cwd=ROOT,
                env=worker_environment(self.dsn, **self.settings,
                                           WEBHOOKS_METRICS_PORT=str(port)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self._ports[process.pid] = port
        return process

    def _wait_ready(self, process: subprocess.Popen) -> None:
        """Wait until `process` answers /healthz: it has its SIGTERM handler from then on."""
        url = f"http://127.0.0.1:{self._ports[process.pid]}/healthz"
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"worker {process.pid} did not start (exit code {process.poll()}); "
                           f"see the logs in {self.workdir}")

    def _wait_sessions_ended(self, ports: set[int], dead_at: float) -> None:
        """Wait until PostgreSQL has no session left that began before `dead_at` (Unix time)
        from a client on one of these ports."""
        deadline = time.monotonic() + STOP_TIMEOUT
        while sql(self.dsn, "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)"
                            " AND backend_start < to_timestamp(%s)",
                  (sorted(ports), dead_at))[0][0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sessions of a killed worker still open after "
                                   f"{STOP_TIMEOUT:g} s (client ports {sorted(ports)})")
            time.sleep(0.05)

    def _claims_of(self, pid: int) -> list[int]:
        rows = sql(self.dsn, "SELECT id FROM deliveries WHERE status = 'delivering'"
                                 " AND claimed_by LIKE %s", (f"%:{pid}:%",))
        return [row[0] for row in rows]


def _ports_to(pid: int, remote_port: int) -> set[int]:
    """Return the local ports of the TCP connections process `pid` holds to `remote_port`
    (Linux's /proc).

    Only those: a connection to another address (the receiver) may share its local port with
    another process's connection to PostgreSQL, which the kernel allows for different peers.
    """
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes and int(fields[2].rsplit(":", 1)[1], 16) == remote_port:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports

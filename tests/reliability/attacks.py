"""The hostile-endpoint and SSRF scenarios: what endpoints do to the sender, where it may go.

`hostile` delivers to every endpoint of tests/catalogues/hostile_endpoints.py and checks
each attempt against what that endpoint must cause; `ssrf` delivers to every target of the
catalogue (tests/catalogues/ssrf_targets.py) with private endpoints not allowed and checks
that each one is blocked before any connection. Both run real `webhooks worker` processes
until no delivery is pending or in flight, stop them warmly, and return a verdict.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gevent
from gevent.server import StreamServer

from db import configs
from db.adhoc import count_deliveries, sql
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from service.dispatch.sender import EXCERPT_LIMIT
from tests.catalogues.hostile_endpoints import KINDS, HostileEndpoints, Kind
from tests.catalogues.ssrf_targets import HOSTS
from tests.reliability.check import Findings, Verdict
from tests.reliability.fleet import Workers
from tests.reliability.run import POLL, Options, publish

HOSTILE_ATTEMPTS = 3  # WEBHOOKS_MAX_ATTEMPTS of the hostile scenario
# An attempt may last twice the timeout: the timeout, then as long again for a worker's event
# loop that is late (each new HTTPS connection loads the CA bundle, 13 ms of CPU; the
# machine is shared). What it must never do is last as long as the endpoint wants.
DURATION_BOUND = 2.0  # x WEBHOOKS_HTTP_TIMEOUT
# Peak resident memory a worker may reach, in MiB: an idle worker takes about 90; an attempt
# keeps at most 64 KiB of a body, so a MiB per WEBHOOKS_DISPATCH_CONCURRENCY slot is generous
RSS_BASE_MB = 100.0
RSS_PER_SLOT_MB = 1.0
# No worker is killed in these runs: no claim may go stale, however slow the endpoints
NO_CRASH_SETTINGS = {"WEBHOOKS_CLAIM_TIMEOUT": "60s"}
BLOCKED = re.compile(r"blocked: \S+ resolves to (\S+) \(([^)]+)\); "
                     r"set WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS=true to allow private endpoints")
SCHEMES = ("http", "https")
SSRF_TYPE = "ssrf.probe"

Say = Callable[[str], None]


def hostile(dsn: str, workdir: Path, options: Options, say: Say = print) -> Verdict:
    """Deliver `options.per_kind` events to each hostile endpoint; check every attempt."""
    settings = options.worker_settings(WEBHOOKS_HTTP_TIMEOUT=f"{options.hostile_timeout:g}s",
                                       WEBHOOKS_MAX_ATTEMPTS=str(HOSTILE_ATTEMPTS),
                                       **NO_CRASH_SETTINGS)
    endpoints = HostileEndpoints(workdir)
    endpoints.start()
    try:
        _subscribe(dsn, [(f"hostile.{kind.name}", endpoints.url(kind)) for kind in KINDS])
        for kind in KINDS:
            publish(dsn, [f"{kind.name}-{n:06d}" for n in range(options.per_kind)], {},
                    options.rate, event_type=f"hostile.{kind.name}")
        facts = run_workers(Workers(dsn, workdir, settings, options.workers), options, say)
    finally:
        endpoints.stop()
    rows = sql(dsn, "SELECT c.name, d.id, d.status, d.attempt_count, d.last_error,"
                        " a.outcome, a.status_code, a.duration_ms, a.error,"
                        " length(a.response_excerpt) FROM deliveries d"
                        " JOIN configs c ON c.id = d.config_id"
                        " LEFT JOIN delivery_attempts a ON a.delivery_id = d.id"
                        " ORDER BY d.id, a.attempt_number")
    return judge_hostile(rows, endpoints.connections, facts, options)


def judge_hostile(rows: list[tuple], connections: Counter, facts: dict[str, Any],
                  options: Options) -> Verdict:
    """Check every delivery and attempt against its endpoint's Kind, and the workers' bounds."""
    found = Findings()
    by_name = {kind.name: kind for kind in KINDS}
    table = {kind.name: {"deliveries": 0, "attempts": 0, "outcomes": Counter(), "ends": Counter(),
                         "max_duration_ms": 0, "error": None, "connections": connections[kind.name]}
             for kind in KINDS}
    bound_ms = DURATION_BOUND * options.hostile_timeout * 1000
    seen: set[int] = set()
    for name, delivery, status, count, last_error, outcome, code, ms, error, excerpt in rows:
        kind, line, where = by_name[name], table[name], f"{name}: delivery {delivery}"
        if delivery not in seen:
            seen.add(delivery)
            line["deliveries"] += 1
            line["ends"][status] += 1
            _judge_end(kind, status, count, last_error, where, found)
        if outcome is None:
            continue  # never attempted: counted by the end's check
        line["attempts"] += 1
        line["outcomes"][f"{outcome} {code}" if code else outcome] += 1
        line["max_duration_ms"] = max(line["max_duration_ms"], ms)
        line["error"] = line["error"] or error or (last_error if code else None)
        found.require((outcome, code) == (kind.outcome, kind.status_code),
                      "attempt recorded otherwise", f"{where}: {outcome} {code}, expected "
                      f"{kind.outcome} {kind.status_code}")
        found.require(kind.error is None or code != 0 or kind.error in (error or ""),
                      "attempt without the endpoint's error", f"{where}: {error!r}")
        found.require(ms <= bound_ms, "attempt longer than the timeout allows",
                      f"{where}: {ms} ms > {bound_ms:g} ms")
        found.require((excerpt or 0) <= EXCERPT_LIMIT, "more of a body kept than the limit",
                      f"{where}: {excerpt} characters")
    found.require(len(seen) == len(KINDS) * options.per_kind, "deliveries missing",
                  f"{len(seen)} of {len(KINDS) * options.per_kind}")
    found.require(connections["internal"] == 0, "redirect followed to the internal target",
                  f"{connections['internal']} connections")
    rss_bound = RSS_BASE_MB + RSS_PER_SLOT_MB * options.concurrency
    found.require(facts["rss_peak_mb"] <= rss_bound, "worker memory beyond its bound",
                  f"{facts['rss_peak_mb']:.0f} MiB > {rss_bound:g} MiB")
    judge_workers(facts, found)
    for line in table.values():
        line["outcomes"], line["ends"] = dict(line["outcomes"]), dict(line["ends"])
    counts = {**facts, "kinds": table, "hostile_kinds": len(KINDS), "per_kind": options.per_kind,
              "deliveries": len(seen), "attempts": sum(line["attempts"] for line in table.values()),
              "max_duration_ms": max(line["max_duration_ms"] for line in table.values()),
              "timeout_ms": round(options.hostile_timeout * 1000),
              "duration_bound_ms": round(bound_ms),
              "rss_bound_mb": rss_bound, "internal_connections": connections["internal"],
              "concurrency": options.concurrency, "workers": options.workers}
    return found.verdict(counts)


def _judge_end(kind: Kind, status: str, count: int, last_error: str | None, where: str,
               found: Findings) -> None:
    """Check how a delivery ended: as its Kind says, after as many attempts as it allows."""
    retried = kind.status == "failed" and kind.outcome != "http_error"
    attempts = HOSTILE_ATTEMPTS if retried else 1
    found.require((status, count) == (kind.status, attempts), "delivery ended otherwise",
                  f"{where}: {status} after {count} attempts, expected {kind.status} "
                  f"after {attempts}")
    if status == "failed":
        found.require(kind.error is not None and kind.error in (last_error or ""),
                      "failed without the endpoint's error", f"{where}: {last_error!r}")


def ssrf(dsn: str, workdir: Path, options: Options, say: Say = print) -> Verdict:
    """Deliver `options.ssrf_rounds` events to every catalogue target; none may be connected."""
    log = workdir / "connections.jsonl"
    settings = options.worker_settings(WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="false",
                                       **NO_CRASH_SETTINGS)
    workers = Workers(dsn, workdir, settings, options.workers,
                      command=("-m", "tests.reliability.ssrf_worker", "--connections", str(log)))
    with _listener() as listener:
        targets = [f"{scheme}://{host}:{listener.port}/ssrf" for host in HOSTS
                   for scheme in SCHEMES]
        _subscribe(dsn, [(SSRF_TYPE, target) for target in targets])
        publish(dsn, [f"probe-{n:06d}" for n in range(options.ssrf_rounds)], {}, options.rate,
                event_type=SSRF_TYPE)
        facts = run_workers(workers, options, say)
        gevent.sleep(POLL)  # a connection made at the very end still reaches the listener
    rows = sql(dsn, "SELECT c.endpoint, d.id, d.status, d.attempt_count, a.outcome, a.error"
                        " FROM deliveries d JOIN configs c ON c.id = d.config_id"
                        " LEFT JOIN delivery_attempts a ON a.delivery_id = d.id"
                        " ORDER BY d.id, a.attempt_number")
    opened = log.read_text().splitlines() if log.exists() else None
    return judge_ssrf(rows, targets, listener, opened, facts, options)


def judge_ssrf(rows: list[tuple], targets: list[str], listener: _Listener,
               opened: list[str] | None, facts: dict[str, Any], options: Options) -> Verdict:
    """Check that every delivery failed at its one attempt, blocked and counted as no request
    sent, and that nothing connected."""
    found = Findings()
    reasons: Counter = Counter()
    attempts = blocked = 0
    failed: set[int] = set()
    for endpoint, delivery, status, count, outcome, error in rows:
        where = f"{endpoint}: delivery {delivery}"
        found.require((status, count) == ("failed", 0), "delivery not failed at its first attempt",
                      f"{where}: {status} after {count} attempts")
        if status == "failed":
            failed.add(delivery)
        if outcome is None:
            continue
        attempts += 1
        match = BLOCKED.search(error or "")
        found.require(outcome == "blocked" and match is not None, "attempt not clearly blocked",
                      f"{where}: {outcome} {error!r}")
        if outcome == "blocked" and match:
            blocked += 1
            reasons[match[2]] += 1
    deliveries = len({row[1] for row in rows})
    found.require(deliveries == len(targets) * options.ssrf_rounds, "deliveries missing",
                  f"{deliveries} of {len(targets) * options.ssrf_rounds}")
    found.require(listener.connections == 0, "connection seen by the listener",
                  f"{listener.connections} connections")
    found.require(listener.controls_seen == listener.CONTROLS, "the listener is blind",
                  f"it saw {listener.controls_seen} of its {listener.CONTROLS} control connections")
    found.require(opened is not None, "the workers' connection log is missing",
                  "tests/reliability/ssrf_worker.py did not run")
    found.require(not opened, "connection opened by the sender", "; ".join((opened or [])[:5]))
    judge_workers(facts, found)
    counts = {**facts, "targets": len(targets), "hosts": len(HOSTS), "schemes": len(SCHEMES),
              "rounds": options.ssrf_rounds, "deliveries": deliveries, "failed": len(failed),
              "attempts": attempts, "blocked": blocked, "reasons": dict(reasons.most_common()),
              "listener_connections": listener.connections,
              "control_connections": listener.controls_seen,
              "connections_opened": len(opened or []),
              "concurrency": options.concurrency, "workers": options.workers}
    return found.verdict(counts)


class _Listener:
    """A dual-stack listener on every local address of one port, counting connections.

    Before counting, it checks that it sees connections to 127.0.0.1 and ::1 (CONTROLS).
    """

    CONTROLS = 2

    def __init__(self) -> None:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        self.connections = 0
        self.controls_seen = 0
        self._server = StreamServer(sock, self._count)

    def start(self) -> None:
        self._server.start()
        for address in ("127.0.0.1", "::1"):
            with contextlib.suppress(OSError), socket.create_connection((address, self.port), 2):
                pass
        deadline = time.monotonic() + 5
        while self.connections < self.CONTROLS and time.monotonic() < deadline:
            gevent.sleep(0.01)
        self.controls_seen, self.connections = self.connections, 0

    def stop(self) -> None:
        self._server.stop(timeout=0)

    def _count(self, sock: socket.socket, address) -> None:
        self.connections += 1
        sock.close()


@contextlib.contextmanager
def _listener() -> Iterator[_Listener]:
    listener = _Listener()
    listener.start()
    try:
        yield listener
    finally:
        listener.stop()


def _subscribe(dsn: str, subscriptions: list[tuple[str, str]]) -> None:
    """Create one config per (event type, endpoint), named after the type's last part."""
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        for event_type, endpoint in subscriptions:
            configs.create(pool, DEFAULT_TENANT_ID, endpoint=endpoint, event_types=[event_type],
                           name=event_type.split(".")[-1])


def run_workers(workers: Workers, options: Options, say: Say) -> dict[str, Any]:
    """Run `workers` until no delivery is pending or delivering; return what they did."""
    facts: dict[str, Any] = {}
    started = time.monotonic()
    try:
        workers.start()
        facts["rss_start_mb"] = round(workers.peak_rss_mb(), 1)
        pids = workers.alive()
        deadline = started + options.deadline
        while (left := count_deliveries(workers.dsn, "status IN ('pending', 'delivering')")) > 0:
            if time.monotonic() > deadline:
                break
            gevent.sleep(POLL)
        facts.update(stuck=left, elapsed_seconds=round(time.monotonic() - started, 1),
                     rss_peak_mb=round(workers.peak_rss_mb(), 1),
                     workers_survived=workers.alive() == pids)
        say(f"  settled in {facts['elapsed_seconds']} s; worker peak RSS "
            f"{facts['rss_peak_mb']} MiB")
    finally:
        codes = workers.stop()
        facts.update(worker_exit_codes=sorted(codes.values(), key=str),
                     workers_exited_by_themselves=len(workers.exited))
    return facts


def judge_workers(facts: dict[str, Any], found: Findings) -> None:
    """Require that nothing is stuck and the workers lived and stopped as they must."""
    found.require(facts["stuck"] == 0, "stuck", f"{facts['stuck']} pending or delivering")
    found.require(facts["workers_survived"] and not facts["workers_exited_by_themselves"],
                  "worker exited by itself", "a worker process died during the run")
    found.require(all(code == 0 for code in facts["worker_exit_codes"]),
                  "worker did not stop cleanly on SIGTERM", f"{facts['worker_exit_codes']}")

"""What every chaos scenario shares: its options, receiver, configs, workers and verdict.

`running()` starts the flaky receiver, subscribes the configs and stops everything warmly at
the end; `Run.settled()` says when every delivery is terminal; `Run.verdict()` reads the
evidence and checks it (tests/reliability/check.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import gevent
import psycopg2

from db import configs, events
from db.adhoc import count_deliveries, sql
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from tests.reliability.check import Rules, Verdict, check
from tests.reliability.evidence import Kill, gather
from tests.reliability.fleet import Receiver, Workers

EVENT_TYPE = "chaos.event"
OTHER_TYPE = "chaos.other"  # one config listens to it: no event of the run may reach it
PUBLISH_BATCH = 100  # events per ingest transaction
POLL = 0.5  # seconds between two looks at the database while waiting
CIRCUIT_OPENED = "circuit closed -> open"  # what a worker logs (service/dispatch/circuit.py)
DEADLOCK = "deadlock detected"  # PostgreSQL's message, in the log line of the retried call
HEALTH_CORRECTED = "endpoint health corrected"  # what the sweep logs (service/dispatch/recovery.py)
# Configs whose health row counts other attempts in flight than the deliveries really are
MISCOUNTED_CONFIGS = """
    SELECT h.config_id, h.in_flight, count(d.id), h.circuit
    FROM config_health h
    LEFT JOIN deliveries d ON d.config_id = h.config_id AND d.status = 'delivering'
    GROUP BY h.config_id
    HAVING h.in_flight <> count(d.id) OR (h.circuit = 'half_open' AND count(d.id) = 0)"""
# Short backoff and timeouts so that the run takes minutes; a circuit that opens (a starved
# machine can time out twenty sends in a row) probes within seconds, not minutes.
WORKER_SETTINGS = {
    "WEBHOOKS_MIN_BACKOFF": "100ms",
    "WEBHOOKS_MAX_BACKOFF": "500ms",
    "WEBHOOKS_RECOVERY_PERIOD": "500ms",
    "WEBHOOKS_SHUTDOWN_TIMEOUT": "5s",
    "WEBHOOKS_CIRCUIT_PROBE_INTERVAL": "1s",
    "WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL": "4s",
    "WEBHOOKS_ENDPOINT_RAMP": "2s",
}


@dataclass(frozen=True)
class Options:
    """How big, how flaky and how violent a run is (`python -m tests.reliability --help`)."""

    events: int = 20_000
    configs: int = 2  # configs subscribed to the events' type (the fan-out)
    fail_rate: float = 0.3
    kill_every: float = 3.0  # seconds between two SIGKILLs (crash scenario)
    max_kills: int | None = None  # None: keep killing until every delivery is terminal
    workers: int = 2
    concurrency: int = 50  # WEBHOOKS_DISPATCH_CONCURRENCY
    max_attempts: int = 5  # WEBHOOKS_MAX_ATTEMPTS: low enough that some deliveries fail
    claim_timeout: float = 6.0  # WEBHOOKS_CLAIM_TIMEOUT, seconds: a killed worker's claims
    #                             come back within seconds; longer than three http_timeout
    #                             and 2 s (service/policy/claim_age.py)
    http_timeout: float = 1.0  # WEBHOOKS_HTTP_TIMEOUT, seconds; the flaky receiver's hangs
    #                            and slow bodies (30 s and more) always outlast it
    hostile_timeout: float = 2.0  # WEBHOOKS_HTTP_TIMEOUT of the hostile scenario, seconds;
    #                               its hanging endpoints outlast twice as long (100 s and more)
    rate: float = 1000.0  # events published per second
    seed: int = 1
    outage: float = 5.0  # seconds PostgreSQL stays down (database scenario)
    freeze: float = 15.0  # seconds the broker stays frozen: past the session timeout and the
    #                       consumer's 10 s offset-commit timeout (broker scenario)
    session_timeout: float = 6.0  # WEBHOOKS_KAFKA_SESSION_TIMEOUT; the freeze must be longer
    deadline: float = 1800.0  # seconds the run may take to settle before it counts as stuck
    per_kind: int = 200  # deliveries to each hostile endpoint (hostile scenario)
    ssrf_rounds: int = 50  # events sent to every SSRF target (ssrf scenario)
    poison_messages: int = 20_000  # messages on the fuzzed topic, one in five an event (poison)
    secret_configs: int = 100  # configs whose secrets are looked for everywhere (secrets)

    def worker_settings(self, **extra: str) -> dict[str, str]:
        return {**WORKER_SETTINGS, "WEBHOOKS_HTTP_TIMEOUT": f"{self.http_timeout:g}s",
                "WEBHOOKS_MAX_ATTEMPTS": str(self.max_attempts),
                "WEBHOOKS_DISPATCH_CONCURRENCY": str(self.concurrency),
                "WEBHOOKS_CLAIM_TIMEOUT": f"{self.claim_timeout:g}s", **extra}

    def rules(self, *, exactly_once: bool = False) -> Rules:
        return Rules(seed=self.seed, fail_rate=self.fail_rate, max_attempts=self.max_attempts,
                     http_timeout=self.http_timeout, concurrency=self.concurrency,
                     exactly_once=exactly_once)


class Run:
    """What every scenario shares: receiver, configs, workers, the settle check, the verdict."""

    def __init__(self, dsn: str, workdir: Path, options: Options, extra: dict[str, str]):
        self.dsn = dsn
        self.options = options
        self.ids = [f"chaos-{n:06d}" for n in range(options.events)]
        self.published: dict[str, str] = {}  # event id -> type, once sent into the service
        self.receiver = Receiver(workdir, seed=options.seed, fail_rate=options.fail_rate)
        self.workers = Workers(dsn, workdir, options.worker_settings(**extra), options.workers)
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.exit_codes: dict[int, int | None] = {}

    def settled(self, publisher: gevent.Greenlet) -> bool:
        """Return True once everything is published and no delivery is pending or in flight.

        Also True past the deadline (the verdict then counts what is stuck); raises what the
        publisher raised.
        """
        if publisher.dead:
            publisher.get()
        if time.monotonic() - self.started > self.options.deadline:
            return True
        expected = len(self.ids) * self.options.configs
        try:
            return (publisher.dead and count_deliveries(self.dsn, "true") == expected
                    and count_deliveries(self.dsn, "status IN ('pending', 'delivering')") == 0)
        except psycopg2.Error:  # the database is still coming back
            return False

    def progressed(self) -> bool:
        return count_deliveries(self.dsn, "status = 'succeeded'") > 0

    def verdict(self, rules: Rules, kills: list[Kill] | None = None) -> Verdict:
        evidence = gather(self.dsn, self.published, self.receiver.records(), kills)
        verdict = check(evidence, rules)
        verdict.counts.update(elapsed_seconds=round(self.elapsed, 1),
                              worker_exit_codes=sorted(self.exit_codes.values(), key=str),
                              workers_exited_by_themselves=len(self.workers.exited),
                              stale_claims_recovered=self.workers.recovered(),
                              circuits_opened=self.workers.logged(CIRCUIT_OPENED),
                              concurrency=rules.concurrency, workers=self.options.workers,
                              http_timeout=rules.http_timeout,
                              fail_rate=rules.fail_rate, max_attempts=rules.max_attempts)
        require(verdict, not self.workers.exited, "worker exited by itself",
                f"pid -> exit code {self.workers.exited}")
        require(verdict, all(code == 0 for code in self.exit_codes.values()),
                "worker did not stop cleanly on SIGTERM", f"exit codes {self.exit_codes}")
        miscounted = sql(self.dsn, MISCOUNTED_CONFIGS)
        require(verdict, not miscounted, "in-flight count differs from the deliveries in flight",
                f"(config, counted, in flight, circuit): {miscounted}")
        deadlocks = self.workers.logged(DEADLOCK)
        require(verdict, deadlocks == 0, "deadlock between the workers' statements",
                f"{deadlocks} logged: statements lock rows in different orders")
        corrected = self.workers.logged(HEALTH_CORRECTED)
        require(verdict, corrected == 0, "in-flight count corrected by the recovery sweep",
                f"{corrected} corrections logged: a path let the count drift")
        return verdict


@contextlib.contextmanager
def running(dsn: str, workdir: Path, options: Options,
            extra: dict[str, str] | None = None) -> Iterator[Run]:
    """Start the receiver and subscribe the configs; stop the workers and receiver at the end."""
    run = Run(dsn, workdir, options, extra or {})
    run.receiver.start()
    try:
        subscribe(dsn, run.receiver.url, options.configs)
        yield run
        run.elapsed = time.monotonic() - run.started
        run.workers.alive()  # note any worker that died on its own before stopping them
    finally:
        run.exit_codes = run.workers.stop()
        run.receiver.stop()


def subscribe(dsn: str, url: str, fan_out: int) -> None:
    """Create `fan_out` configs for the run's events and one for another type."""
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        for n in range(fan_out):
            configs.create(pool, DEFAULT_TENANT_ID, endpoint=f"{url}/{n}", event_types=[EVENT_TYPE],
                           name=f"chaos-{n}")
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=f"{url}/other", event_types=[OTHER_TYPE],
                       name="chaos-other")


def publish(dsn: str, ids: list[str], published: dict[str, str], rate: float,
            event_type: str = EVENT_TYPE) -> None:
    """Publish events `ids` through db.events.ingest (the API's path), `rate` per second."""
    started = time.monotonic()
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        for start in range(0, len(ids), PUBLISH_BATCH):
            batch = [events.new_event(id, event_type, {"n": id}, tenant_id=DEFAULT_TENANT_ID,
                                      max_payload=1024)
                     for id in ids[start:start + PUBLISH_BATCH]]
            with pool.transaction() as cursor:
                events.ingest(cursor, batch, source="api")
            published.update((event.id, event_type) for event in batch)
            ahead = started + len(published) / rate - time.monotonic()
            if ahead > 0:
                gevent.sleep(ahead)


def wait(condition: Callable[[], bool], options: Options) -> None:
    """Wait until `condition()` is true; raise TimeoutError past the run's deadline."""
    deadline = time.monotonic() + options.deadline
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the run made no progress")
        gevent.sleep(POLL / 5)


def events_stored(dsn: str) -> int:
    """Return how many events the database holds."""
    return sql(dsn, "SELECT count(*) FROM events")[0][0]


def require(verdict: Verdict, condition: bool, kind: str, detail: str) -> None:
    """Count a problem of `kind` in `verdict` unless `condition` holds."""
    if not condition:
        verdict.problem_counts[kind] += 1
        verdict.problems.setdefault(kind, []).append(detail)

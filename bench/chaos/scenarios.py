"""The three chaos scenarios: workers killed, PostgreSQL killed, the broker frozen.

Each runs real `webhooks worker` processes against the flaky receiver until every delivery
is terminal (or `Options.deadline` passes), then stops everything warmly and returns the
checker's verdict with the scenario's own facts (kills, outage length, exit codes, offsets).
The caller provides the PostgreSQL database (and server, to kill it) and the broker.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import gevent
import psycopg2

from bench import environment as env
from bench.chaos.check import Rules, Verdict, check, gather
from bench.chaos.fleet import Receiver, Workers
from bench.chaos.produce import Producer, committed_and_end_offsets
from db import configs, events
from db.pool import ConnectionPool
from service.local_kafka import LocalKafka
from service.local_postgres import LocalPostgres

EVENT_TYPE = "chaos.event"
OTHER_TYPE = "chaos.other"  # one config listens to it: no event of the run may reach it
PUBLISH_BATCH = 100  # events per ingest transaction
POLL = 0.5  # seconds between two looks at the database while waiting
# Short backoff and timeouts so that the run takes minutes.
WORKER_SETTINGS = {
    "WEBHOOKS_MIN_BACKOFF": "100ms",
    "WEBHOOKS_MAX_BACKOFF": "500ms",
    "WEBHOOKS_HTTP_TIMEOUT": "1s",
    "WEBHOOKS_RECOVERY_PERIOD": "500ms",
    "WEBHOOKS_SHUTDOWN_TIMEOUT": "5s",
}
HTTP_TIMEOUT = 1.0  # seconds, WEBHOOKS_HTTP_TIMEOUT above
# What the consumer logs when a batch could not be stored or committed (service/consumer.py)
STORE_FAILED = "storing a batch failed"
COMMIT_REFUSED = "offset commit refused"
NO_CRASH_CLAIM_TIMEOUT = 30.0  # seconds, at least, in the broker scenario: no claim may go stale

Say = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    events: int = 20_000
    configs: int = 2  # configs subscribed to the events' type (the fan-out)
    fail_rate: float = 0.3
    kill_every: float = 3.0  # seconds between two SIGKILLs (crash scenario)
    max_kills: int | None = None  # None: keep killing until every delivery is terminal
    workers: int = 2
    concurrency: int = 50  # WEBHOOKS_DISPATCH_CONCURRENCY
    max_attempts: int = 5  # WEBHOOKS_MAX_ATTEMPTS: low enough that some deliveries fail
    claim_timeout: float = 3.0  # WEBHOOKS_CLAIM_TIMEOUT, seconds: a killed worker's claims
    #                             come back within seconds
    rate: float = 1000.0  # events published per second
    seed: int = 1
    outage: float = 5.0  # seconds PostgreSQL stays down (database scenario)
    freeze: float = 15.0  # seconds the broker stays frozen: past the session timeout and the
    #                       consumer's 10 s offset-commit timeout (broker scenario)
    session_timeout: float = 6.0  # WEBHOOKS_KAFKA_SESSION_TIMEOUT; the freeze must be longer
    deadline: float = 1800.0  # seconds the run may take to settle before it counts as stuck

    def worker_settings(self, **extra: str) -> dict[str, str]:
        return {**WORKER_SETTINGS, "WEBHOOKS_MAX_ATTEMPTS": str(self.max_attempts),
                "WEBHOOKS_DISPATCH_CONCURRENCY": str(self.concurrency),
                "WEBHOOKS_CLAIM_TIMEOUT": f"{self.claim_timeout:g}s", **extra}

    def rules(self, *, exactly_once: bool = False) -> Rules:
        return Rules(seed=self.seed, fail_rate=self.fail_rate, max_attempts=self.max_attempts,
                     http_timeout=HTTP_TIMEOUT, concurrency=self.concurrency,
                     exactly_once=exactly_once)


def crash(dsn: str, workdir: Path, options: Options, say: Say = print) -> Verdict:
    """Publish through db.events while a worker is SIGKILLed and restarted every few seconds."""
    with _run(dsn, workdir, options) as run:
        run.workers.start()
        publisher = gevent.spawn(_publish, dsn, run.ids, run.published, options.rate)
        next_kill: float | None = None
        while not run.settled(publisher):
            now = time.monotonic()
            if next_kill is None and run.progressed():
                next_kill = now + options.kill_every
            if (next_kill is not None and now >= next_kill
                    and (options.max_kills is None or len(run.workers.kills) < options.max_kills)):
                victim = len(run.workers.kills) % options.workers
                kill = run.workers.kill_and_restart(victim)
                say(f"  killed worker {kill.pid} holding {len(kill.held)} claims")
                next_kill = time.monotonic() + options.kill_every
            gevent.sleep(POLL / 2)
    return run.verdict(options.rules(), held_at_kills=[k.held for k in run.workers.kills])


def database_outage(server: LocalPostgres, broker: LocalKafka, workdir: Path, options: Options,
                    say: Say = print) -> Verdict:
    """Produce to Kafka while PostgreSQL is killed (immediate) and started on the same port."""
    dsn = server.dsn
    producer = Producer(broker, options, EVENT_TYPE)
    with _run(dsn, workdir, options, producer.settings()) as run:
        run.workers.start()
        pids = run.workers.alive()
        producing = gevent.spawn(producer.produce, run.ids, run.published)
        _wait(lambda: len(run.published) >= options.events // 3 and run.progressed(), options)
        in_flight = _count(dsn, "status = 'delivering'")
        before = time.monotonic()
        server.kill()
        say(f"  PostgreSQL killed with {in_flight} claims in flight")
        gevent.sleep(options.outage)
        server.start()
        down = time.monotonic() - before
        say(f"  PostgreSQL back after {down:.1f} s")
        while not run.settled(producing):
            gevent.sleep(POLL)
        survivors = run.workers.alive()
        offsets = committed_and_end_offsets(producer)
    verdict = run.verdict(options.rules())
    verdict.counts.update(producer.counts(), **offsets, outage_seconds=round(down, 1),
                          in_flight_at_outage=in_flight, workers_survived=survivors == pids,
                          batches_not_stored=run.workers.logged(STORE_FAILED),
                          commits_refused=run.workers.logged(COMMIT_REFUSED))
    _require(verdict, survivors == pids, "worker restarted or died",
             f"pids {pids} before the outage, {survivors} after")
    _require(verdict, offsets["committed"] == offsets["end"], "offsets not all committed",
             f"committed {offsets['committed']}, end {offsets['end']}")
    return verdict


def broker_outage(dsn: str, broker: LocalKafka, workdir: Path, options: Options,
                  say: Say = print) -> Verdict:
    """Produce to Kafka while the broker is frozen (SIGSTOP) past the session timeout."""
    producer = Producer(broker, options, EVENT_TYPE)
    claim_timeout = max(options.claim_timeout, NO_CRASH_CLAIM_TIMEOUT)
    extra = {**producer.settings(), "WEBHOOKS_CLAIM_TIMEOUT": f"{claim_timeout:g}s"}
    with _run(dsn, workdir, options, extra) as run:
        run.workers.start()
        pids = run.workers.alive()
        producing = gevent.spawn(producer.produce, run.ids, run.published)
        _wait(lambda: len(run.published) >= options.events // 3 and run.progressed(), options)
        broker.pause()
        frozen_at = time.monotonic()
        try:
            gevent.sleep(1.0)  # a batch in hand may still be stored
            stored_frozen = _events(dsn)
            gevent.sleep(max(0.0, options.freeze - 1.0))
            stored_thawed = _events(dsn)
        finally:
            broker.resume()
        frozen = time.monotonic() - frozen_at
        say(f"  broker frozen {frozen:.1f} s; events stored meanwhile: "
            f"{stored_thawed - stored_frozen}")
        while not run.settled(producing):
            gevent.sleep(POLL)
        survivors = run.workers.alive()
        offsets = committed_and_end_offsets(producer)
    verdict = run.verdict(options.rules(exactly_once=True))
    verdict.counts.update(producer.counts(), **offsets, freeze_seconds=round(frozen, 1),
                          stored_while_frozen=stored_thawed - stored_frozen,
                          workers_survived=survivors == pids,
                          batches_not_stored=run.workers.logged(STORE_FAILED),
                          commits_refused=run.workers.logged(COMMIT_REFUSED))
    _require(verdict, survivors == pids, "worker restarted or died",
             f"pids {pids} before the freeze, {survivors} after")
    _require(verdict, stored_thawed == stored_frozen, "events stored while the broker was frozen",
             f"{stored_thawed - stored_frozen} events")
    _require(verdict, offsets["committed"] == offsets["end"], "offsets not all committed",
             f"committed {offsets['committed']}, end {offsets['end']}")
    return verdict


class _Run:
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
            return (publisher.dead and _count(self.dsn, "true") == expected
                    and _count(self.dsn, "status IN ('pending', 'delivering')") == 0)
        except psycopg2.Error:  # the database is still coming back
            return False

    def progressed(self) -> bool:
        return _count(self.dsn, "status = 'succeeded'") > 0

    def verdict(self, rules: Rules, held_at_kills: list[list[int]] | None = None) -> Verdict:
        evidence = gather(self.dsn, self.published, self.receiver.records(), held_at_kills)
        verdict = check(evidence, rules)
        verdict.counts.update(elapsed_seconds=round(self.elapsed, 1),
                              worker_exit_codes=sorted(self.exit_codes.values(), key=str),
                              workers_exited_by_themselves=len(self.workers.exited),
                              concurrency=rules.concurrency, workers=self.options.workers,
                              fail_rate=rules.fail_rate, max_attempts=rules.max_attempts)
        _require(verdict, not self.workers.exited, "worker exited by itself",
                 f"pid -> exit code {self.workers.exited}")
        _require(verdict, all(code == 0 for code in self.exit_codes.values()),
                 "worker did not stop cleanly on SIGTERM", f"exit codes {self.exit_codes}")
        return verdict


@contextlib.contextmanager
def _run(dsn: str, workdir: Path, options: Options,
         extra: dict[str, str] | None = None) -> Iterator[_Run]:
    run = _Run(dsn, workdir, options, extra or {})
    run.receiver.start()
    try:
        _subscribe(dsn, run.receiver.url, options.configs)
        yield run
        run.elapsed = time.monotonic() - run.started
        run.workers.alive()  # note any worker that died on its own before stopping them
    finally:
        run.exit_codes = run.workers.stop()
        run.receiver.stop()


def _subscribe(dsn: str, url: str, count: int) -> None:
    """Create `count` configs for the run's events and one for another type."""
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        for n in range(count):
            configs.create(pool, endpoint=f"{url}/{n}", event_types=[EVENT_TYPE],
                           name=f"chaos-{n}")
        configs.create(pool, endpoint=f"{url}/other", event_types=[OTHER_TYPE],
                       name="chaos-other")


def _publish(dsn: str, ids: list[str], published: dict[str, str], rate: float) -> None:
    """Publish events `ids` through db.events.ingest (the API's path), `rate` per second."""
    started = time.monotonic()
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        for start in range(0, len(ids), PUBLISH_BATCH):
            batch = [events.new_event(id, EVENT_TYPE, {"n": id}, max_payload=1024)
                     for id in ids[start:start + PUBLISH_BATCH]]
            with pool.transaction() as cursor:
                events.ingest(cursor, batch, source="api")
            published.update((event.id, EVENT_TYPE) for event in batch)
            ahead = started + len(published) / rate - time.monotonic()
            if ahead > 0:
                gevent.sleep(ahead)


def _wait(condition: Callable[[], bool], options: Options) -> None:
    deadline = time.monotonic() + options.deadline
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the run made no progress")
        gevent.sleep(POLL / 5)


def _count(dsn: str, where: str) -> int:
    return env.count(dsn, where)


def _events(dsn: str) -> int:
    return env.sql(dsn, "SELECT count(*) FROM events")[0][0]


def _require(verdict: Verdict, condition: bool, kind: str, detail: str) -> None:
    if not condition:
        verdict.problem_counts[kind] += 1
        verdict.problems.setdefault(kind, []).append(detail)

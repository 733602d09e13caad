"""The three chaos scenarios: workers killed, PostgreSQL killed, the broker frozen.

Each runs real `webhooks worker` processes against the flaky receiver until every delivery
is terminal (or `Options.deadline` passes), then stops everything warmly and returns the
checker's verdict with the scenario's own facts (kills, outage length, offsets).
The caller provides the PostgreSQL database (and server, to kill it) and the broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent

from bench import environment as env
from bench.chaos.check import Rules, Verdict
from bench.chaos.produce import Producer, committed_and_end_offsets
from bench.chaos.run import (
    EVENT_TYPE,
    POLL,
    Options,
    Run,
    events_stored,
    publish,
    require,
    running,
    wait,
)
from service.local_kafka import LocalKafka
from service.local_postgres import LocalPostgres

# What the consumer logs when a batch could not be stored or committed (service/consumer.py)
STORE_FAILED = "storing a batch failed"
COMMIT_REFUSED = "offset commit refused"
NO_CRASH_CLAIM_TIMEOUT = 30.0  # seconds, at least, in the broker scenario: no claim may go stale

Say = Callable[[str], None]


def crash(dsn: str, workdir: Path, options: Options, say: Say = print) -> Verdict:
    """Publish through db.events while a worker is SIGKILLed and restarted every few seconds."""
    with running(dsn, workdir, options) as run:
        run.workers.start()
        publisher = gevent.spawn(publish, dsn, run.ids, run.published, options.rate)
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
        publisher.kill()  # still running only when the deadline passed
    return run.verdict(options.rules(), kills=run.workers.kills)


def database_outage(server: LocalPostgres, broker: LocalKafka, workdir: Path, options: Options,
                    say: Say = print) -> Verdict:
    """Produce to Kafka while PostgreSQL is killed (immediate) and started on the same port."""
    dsn = server.dsn
    producer = Producer(broker, options, EVENT_TYPE)
    with running(dsn, workdir, options, producer.settings()) as run:
        pids, producing = _start_producing(run, producer, options)
        in_flight = env.count(dsn, "status = 'delivering'")
        before = time.monotonic()
        server.kill()
        say(f"  PostgreSQL killed with {in_flight} claims in flight")
        gevent.sleep(options.outage)
        server.start()
        down = time.monotonic() - before
        say(f"  PostgreSQL back after {down:.1f} s")
        facts = _finish_producing(run, producer, producing, pids)
    return _kafka_verdict(run, producer, options.rules(), facts, outage_seconds=round(down, 1),
                          in_flight_at_outage=in_flight)


def broker_outage(dsn: str, broker: LocalKafka, workdir: Path, options: Options,
                  say: Say = print) -> Verdict:
    """Produce to Kafka while the broker is frozen (SIGSTOP) past the session timeout."""
    producer = Producer(broker, options, EVENT_TYPE)
    claim_timeout = max(options.claim_timeout, NO_CRASH_CLAIM_TIMEOUT)
    extra = {**producer.settings(), "WEBHOOKS_CLAIM_TIMEOUT": f"{claim_timeout:g}s"}
    with running(dsn, workdir, options, extra) as run:
        pids, producing = _start_producing(run, producer, options)
        broker.pause()
        frozen_at = time.monotonic()
        try:
            gevent.sleep(1.0)  # a batch in hand may still be stored
            stored_frozen = events_stored(dsn)
            gevent.sleep(max(0.0, options.freeze - 1.0))
            stored_thawed = events_stored(dsn)
        finally:
            broker.resume()
        frozen = time.monotonic() - frozen_at
        say(f"  broker frozen {frozen:.1f} s; events stored meanwhile: "
            f"{stored_thawed - stored_frozen}")
        facts = _finish_producing(run, producer, producing, pids)
    verdict = _kafka_verdict(run, producer, options.rules(exactly_once=True), facts,
                             freeze_seconds=round(frozen, 1),
                             stored_while_frozen=stored_thawed - stored_frozen)
    require(verdict, stored_thawed == stored_frozen, "events stored while the broker was frozen",
            f"{stored_thawed - stored_frozen} events")
    require(verdict, verdict.counts["stale_claims_recovered"] == 0,
            "claim went stale without a crash",
            f"{verdict.counts['stale_claims_recovered']} claims recovered")
    return verdict


def _start_producing(run: Run, producer: Producer,
                     options: Options) -> tuple[list[int], gevent.Greenlet]:
    """Start the workers and the producer; return once a third is produced and delivering."""
    run.workers.start()
    pids = run.workers.alive()
    producing = gevent.spawn(producer.produce, run.ids, run.published)
    wait(lambda: len(run.published) >= options.events // 3 and run.progressed(), options)
    return pids, producing


def _finish_producing(run: Run, producer: Producer, producing: gevent.Greenlet,
                      pids: list[int]) -> dict[str, Any]:
    """Wait until every delivery is terminal; return what the Kafka scenarios check."""
    while not run.settled(producing):
        gevent.sleep(POLL)
    producing.kill()  # still running only when the deadline passed
    return {"pids": pids, "survivors": run.workers.alive(),
            **committed_and_end_offsets(producer)}


def _kafka_verdict(run: Run, producer: Producer, rules: Rules, facts: dict[str, Any],
                   **counts: Any) -> Verdict:
    verdict = run.verdict(rules)
    verdict.counts.update(
        producer.counts(), committed=facts["committed"], end=facts["end"],
        messages_in_topic=facts["messages_in_topic"],
        workers_survived=facts["survivors"] == facts["pids"],
        batches_not_stored=run.workers.logged(STORE_FAILED),
        commits_refused=run.workers.logged(COMMIT_REFUSED), **counts)
    require(verdict, facts["survivors"] == facts["pids"], "worker restarted or died",
            f"pids {facts['pids']} at the start, {facts['survivors']} at the end")
    require(verdict, facts["committed"] == facts["end"], "offsets not all committed",
            f"committed {facts['committed']}, end {facts['end']}")
    return verdict

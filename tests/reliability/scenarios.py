"""The chaos scenarios on the flaky receiver: workers killed, PostgreSQL killed, the broker
frozen, poison messages on the topic.

Each runs real `webhooks worker` processes against the flaky receiver until every delivery
is terminal (or `Options.deadline` passes), then stops everything warmly and returns the
checker's verdict with the scenario's own facts (kills, outage length, offsets, quarantine).
The caller provides the PostgreSQL database (and server, to kill it) and the broker.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import gevent

from db.adhoc import count_deliveries, sql
from service.local.kafka import LocalKafka
from service.local.postgres import LocalPostgres
from tests.catalogues.poison_messages import MAX_PAYLOAD, REASONS, poison, reason_kind
from tests.outages import broker_frozen, postgres_down
from tests.reliability.check import Rules, Verdict
from tests.reliability.produce import Message, Producer, committed_and_end_offsets
from tests.reliability.run import (
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

# What the consumer logs when a batch could not be stored or committed (service/ingest/consumer.py)
STORE_FAILED = "storing a batch failed"
COMMIT_REFUSED = "offset commit refused"
NO_CRASH_CLAIM_TIMEOUT = 30.0  # seconds, at least, in the broker scenario: no claim may go stale
POISON_PER_EVENT = 4  # poison messages per event, on average, in the poison scenario

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
    verdict = run.verdict(options.rules(), kills=run.workers.kills)
    # A dead worker's claims come back only through the stale-claim sweep
    require(verdict, verdict.counts["stale_claims_recovered"]
            >= verdict.counts["claims_held_at_kills"], "killed workers' claims not recovered",
            f"{verdict.counts['stale_claims_recovered']} recovered, "
            f"{verdict.counts['claims_held_at_kills']} held at the kills")
    return verdict


def database_outage(server: LocalPostgres, broker: LocalKafka, workdir: Path, options: Options,
                    say: Say = print) -> Verdict:
    """Produce to Kafka while PostgreSQL is killed (immediate) and started on the same port.

    A third of the events is produced before the kill, the rest while PostgreSQL is down; it
    stays down `options.outage` seconds and until a worker has failed to store a batch.
    """
    dsn = server.dsn
    producer = Producer(broker, options, EVENT_TYPE, hold_at=options.events // 3)
    with running(dsn, workdir, options, producer.settings()) as run:
        pids, producing = _start_producing(run, producer, options)
        in_flight = count_deliveries(dsn, "status = 'delivering'")
        before = time.monotonic()
        with postgres_down(server):
            say(f"  PostgreSQL killed with {in_flight} claims in flight")
            producer.resume.set()
            gevent.sleep(options.outage)
            wait(lambda: run.workers.logged(STORE_FAILED) > 0, options)
        down = time.monotonic() - before
        say(f"  PostgreSQL back after {down:.1f} s")
        facts = _finish_producing(run, producer, producing, pids)
    return _kafka_verdict(run, producer, options.rules(), facts, outage_seconds=round(down, 1),
                          in_flight_at_outage=in_flight)


def broker_outage(dsn: str, broker: LocalKafka, workdir: Path, options: Options,
                  say: Say = print) -> Verdict:
    """Produce to Kafka while the broker is frozen (SIGSTOP) past the session timeout.

    A third of the events is produced and stored before the freeze (so no batch is in hand
    when it starts), the rest while the broker is frozen.
    """
    producer = Producer(broker, options, EVENT_TYPE, hold_at=options.events // 3)
    claim_timeout = max(options.claim_timeout, NO_CRASH_CLAIM_TIMEOUT)
    extra = {**producer.settings(), "WEBHOOKS_CLAIM_TIMEOUT": f"{claim_timeout:g}s"}
    with running(dsn, workdir, options, extra) as run:
        pids, producing = _start_producing(run, producer, options)
        wait(lambda: events_stored(dsn) == len(run.published), options)
        with broker_frozen(broker):
            frozen_at = time.monotonic()
            stored_frozen = events_stored(dsn)
            producer.resume.set()
            gevent.sleep(options.freeze)
            stored_thawed = events_stored(dsn)
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


def poison_topic(dsn: str, broker: LocalKafka, workdir: Path, options: Options,
                 say: Say = print) -> Verdict:
    """Produce events among four times as many poison messages to a steady receiver.

    `options.poison_messages` messages in all; every event must be delivered once, every
    poison message quarantined with a known reason.
    """
    steady = replace(options, events=max(1, options.poison_messages // (1 + POISON_PER_EVENT)),
                     fail_rate=0.0)
    producer = PoisonProducer(broker, steady, EVENT_TYPE)
    extra = {**producer.settings(), "WEBHOOKS_MAX_PAYLOAD": str(MAX_PAYLOAD),
             "WEBHOOKS_CLAIM_TIMEOUT": f"{NO_CRASH_CLAIM_TIMEOUT:g}s"}
    with running(dsn, workdir, steady, extra) as run:
        run.workers.start()
        pids = run.workers.alive()
        producing = gevent.spawn(producer.produce, run.ids, run.published)
        facts = _finish_producing(run, producer, producing, pids)
    verdict = _kafka_verdict(run, producer, steady.rules(exactly_once=True), facts)
    rejected = sql(dsn, 'SELECT partition, "offset", reason FROM rejected_events'
                            " WHERE topic = %s", (producer.topic,))
    _judge_quarantine(verdict, producer, rejected)
    verdict.counts.update(_latencies(dsn, producer, run.receiver.records()))
    say(f"  {verdict.counts['quarantined']:,} messages quarantined")
    return verdict


class PoisonProducer(Producer):
    """Each event after 0 to 2 x POISON_PER_EVENT poison messages
    (tests/catalogues/poison_messages.py)."""

    def __init__(self, broker: LocalKafka, options: Options, event_type: str) -> None:
        super().__init__(broker, options, event_type)
        self.rng = random.Random(options.seed)

    def messages(self, ids: list[str]) -> Iterator[Message]:
        for n, event in enumerate(super().messages(ids)):
            for m in range(self.rng.randrange(2 * POISON_PER_EVENT + 1)):
                yield Message(None, f"poison-{n}-{m}".encode(), poison(self.rng))
            yield event


def _judge_quarantine(verdict: Verdict, producer: Producer, rejected: list[tuple]) -> None:
    """Require every poison message quarantined with a known reason, and no event."""
    where = {n: producer.acknowledged.get(n) for n in range(len(producer.sent))}
    poison_at = {where[n] for n, m in enumerate(producer.sent) if m.event_id is None}
    events_at = {where[n] for n, m in enumerate(producer.sent) if m.event_id is not None}
    quarantined = {(partition, offset) for partition, offset, _ in rejected}
    reasons = Counter(reason_kind(reason) for _, _, reason in rejected)
    missing, wrong = poison_at - quarantined, events_at & quarantined
    require(verdict, not missing, "poison message not quarantined",
            f"{len(missing)}, e.g. at {sorted(missing, key=str)[:5]}")
    require(verdict, not wrong, "event quarantined", f"{len(wrong)}, e.g. at {sorted(wrong)[:5]}")
    require(verdict, set(reasons) <= REASONS, "unknown rejection reason",
            f"{sorted(set(reasons) - REASONS)}")
    verdict.counts.update(messages_produced=len(producer.sent), good_produced=len(events_at),
                          poison_produced=len(poison_at), quarantined=len(quarantined),
                          quarantine_reasons=dict(reasons.most_common()))


def _latencies(dsn: str, producer: Producer, posts: list[dict]) -> dict[str, float]:
    """Return percentiles of the seconds from producing an event to its first POST."""
    sent_at = {m.event_id: producer.sent_at[n] for n, m in enumerate(producer.sent)
               if m.event_id is not None}
    event_of = dict(sql(dsn, "SELECT coalesce(webhook_id, id::text), event_id FROM deliveries"))
    first: dict[str, float] = {}
    for post in posts:
        first.setdefault(post["id"], post["t"])
    seconds = sorted(t - sent_at[event_of[id]] for id, t in first.items()
                     if event_of.get(id) in sent_at)
    if not seconds:
        return {}
    return {f"latency_{name}_s": round(seconds[min(len(seconds) - 1, int(share * len(seconds)))], 2)
            for name, share in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))}


def _start_producing(run: Run, producer: Producer,
                     options: Options) -> tuple[list[int], gevent.Greenlet]:
    """Start the workers and the producer; return once a third is produced and delivering (the
    producer may hold there: `Producer.hold_at`)."""
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

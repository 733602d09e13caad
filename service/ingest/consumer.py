"""Kafka ingestion: broker messages become events and deliveries; offsets follow the database.

One greenlet per worker process polls a batch, reads each message (service.ingest.envelope),
stores the events with their fan-out and the poison messages in one transaction
(service.ingest.batches), and only then commits the batch's offsets. Every step is safe to
repeat: an event id and a rejected message's position are stored at most once, so a batch
read again after a crash, a refused commit or a rebalance creates nothing new.

No failure ends the loop:
- database down: nothing is committed; the batch's partitions are rewound to the batch's
  first offsets and read again after a capped exponential pause;
- a value the database refuses: the batch is halved until the culprit stands alone; it is
  quarantined as `unstorable` and the rest is stored;
- broker down: kafka-python reconnects by itself; creating the client is retried;
- commit refused (rebalance, timeout): logged; the partition's next reader gets the batch
  again and stores nothing twice;
- a batch the client cannot decode (no library for its codec, corrupt bytes): its partition
  is found (service.ingest.undecodable), held at that offset (paused, never skipped), logged once
  per distinct cause, counted in a gauge, shown in `stats` and failing /readyz, while the
  other partitions keep flowing. It is read again when it moves to another worker or this
  one restarts.

Rates: a message whose tenant is over its events per second waits in its partition, never
dropped or rejected: the batch stores what the rates allow, commits each partition up to its
first waiting message, and pauses that partition until the wait is over
(service.ingest.rate_holds); the other partitions keep flowing.

Transactions: the client reads `read_committed`, so a transaction still open holds its
partition at its first record, and records of aborted transactions are dropped by the
client, found from the transaction markers when the broker does not list them
(service.ingest.read_committed); a transaction that cannot be decided is held as a batch
that cannot be decoded.
"""

from __future__ import annotations

import logging
import math
import socket
import time
from typing import TYPE_CHECKING

import gevent
import gevent.event
from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError

from db import stalls
from db.catalog import CatalogMode
from db.errors import DatabaseError
from db.pool import ConnectionPool
from db.stalls import Stall
from service.ingest import read_committed
from service.ingest.batches import Progress, Waiting, store_batch
from service.ingest.rate_holds import Hold, holds
from service.ingest.undecodable import find_undecodable, is_decoding_error
from service.policy.backoff import pause_after
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry

if TYPE_CHECKING:
    from kafka.consumer.fetcher import ConsumerRecord

    Positions = dict[TopicPartition, list[ConsumerRecord]]

log = logging.getLogger("webhooks.consumer")

POLL_TIMEOUT_MS = 500  # longest wait of one poll for messages; also how soon stop() is seen
COMMIT_TIMEOUT_MS = 10_000  # an offset commit not done by then counts as refused
CLOSE_TIMEOUT_MS = 2_000  # leaving the group on stop, at most
CONNECT_TIMEOUT = 2.0  # seconds to reach a bootstrap server before retrying
STOP_GRACE = 3.0  # seconds stop() lets the batch in hand be stored and committed


class Consumer:
    """The broker side of one worker: a consumer-group member that ingests batches."""

    def __init__(self, pool: ConnectionPool, settings: Settings, *, telemetry: Telemetry,
                 name: str = "webhooks") -> None:
        self.pool = pool
        self.settings = settings
        self.telemetry = telemetry
        self.name = name
        self.progress = Progress()
        self.client: KafkaConsumer | None = None
        self.stalled: dict[TopicPartition, Stall] = {}  # held: their next batch is undecodable
        # held for their tenants' rates: when each is read again (monotonic seconds)
        self.waiting: dict[TopicPartition, float] = {}
        self._reported: set[Stall] = set()  # causes already logged
        self._stopping = gevent.event.Event()
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self._greenlet = gevent.spawn(self.run)

    def stop(self, timeout: float = STOP_GRACE) -> None:
        """Stop polling; let the batch in hand be stored and committed (bounded); leave."""
        self._stopping.set()
        if self._greenlet is not None:
            self._greenlet.join(timeout)
            if not self._greenlet.dead:
                log.warning("abandoning the batch in hand; the group will read it again")
                self._greenlet.kill(timeout=1)
        self._close()

    def run(self) -> None:
        """Consume until stop(); failures are logged and retried, never raised."""
        failures = 0
        try:
            while not self._stopping.is_set():
                try:
                    succeeded = self._consume_once()
                except Exception:
                    log.exception("consumer step failed; starting a new Kafka client")
                    self._close()
                    succeeded = False
                if succeeded:
                    failures = 0
                else:
                    failures += 1
                    self._stopping.wait(pause_after(failures))
        finally:
            self._close()

    def _consume_once(self) -> bool:
        """Poll one batch and ingest it; return False after a failure that wants a pause."""
        client = self.client or self._connect()
        if client is None:
            return False
        try:
            polled: Positions = client.poll(timeout_ms=self._release_waiting(client))
        except Exception as error:  # the client cannot be polled again after this
            held = is_decoding_error(error) and self._hold_undecodable(client)
            if not held:
                log.warning("poll failed; starting a new Kafka client",
                            extra={"error": repr(error)},
                            exc_info=not isinstance(error, KafkaError))
            self._close()
            return held
        if not polled or self._stopping.is_set():
            self._measure_lag(client)
            return True  # a batch polled after stop() is left for the group to read again
        try:
            waiting = store_batch(
                self.pool, [record for records in polled.values() for record in records],
                max_payload=self.settings.max_payload, telemetry=self.telemetry,
                progress=self.progress, create_tenants=self.settings.create_tenants_on_publish,
                strict_event_types=self.settings.event_types == CatalogMode.STRICT)
        except Exception as error:
            self._rewind(client, polled)
            log.warning("storing a batch failed; nothing committed, reading it again",
                        extra={"error": str(error), "error_type": type(error).__name__,
                               "messages": sum(map(len, polled.values()))},
                        exc_info=not isinstance(error, DatabaseError))
            return False
        held = _holds(waiting)
        self._commit(client, polled, held)
        self._hold(client, held)
        self._measure_lag(client)
        return True

    def _release_waiting(self, client: KafkaConsumer) -> int:
        """Resume the partitions whose wait is over; return how long the next poll may wait
        (ms): POLL_TIMEOUT_MS, or less when another wait ends sooner."""
        now = time.monotonic()
        due = [tp for tp, until in self.waiting.items() if until <= now]
        for tp in due:
            del self.waiting[tp]
        assigned = client.assignment()
        if resumed := [tp for tp in due if tp in assigned]:
            client.resume(*resumed)
        next_release = min(self.waiting.values(), default=math.inf)
        return int(min(POLL_TIMEOUT_MS, max(0.0, (next_release - now) * 1000)))

    def _hold(self, client: KafkaConsumer, held: dict[TopicPartition, Hold]) -> None:
        """Read each partition held for its tenants' rates again from its first waiting
        message, once its wait is over (paused until then)."""
        assigned = client.assignment()
        now = time.monotonic()
        for tp, hold in held.items():
            if tp in assigned:
                client.seek(tp, hold.offset)
                client.pause(tp)
                self.waiting[tp] = now + hold.seconds
                log.debug("partition waits for its tenants' rates", extra={
                    "partition": f"{tp.topic}:{tp.partition}", "offset": hold.offset,
                    "seconds": hold.seconds})

    def _connect(self) -> KafkaConsumer | None:
        servers = self._servers()
        # KafkaConsumer() leaks its network thread when it cannot bootstrap, so only build
        # one once a server answers.
        if not any(_reachable(server) for server in servers):
            log.warning("Kafka brokers unreachable; retrying", extra={"brokers": servers})
            return None
        session_ms = int(self.settings.kafka_session_timeout * 1000)
        try:
            client = KafkaConsumer(
                bootstrap_servers=servers,
                group_id=self.settings.kafka_group_id,
                client_id=self.name,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                max_poll_records=self.settings.kafka_batch_size,
                session_timeout_ms=session_ms,
                heartbeat_interval_ms=max(100, session_ms // 3),
                metrics_enabled=False,
            )
        except KafkaError as error:
            log.warning("cannot start the Kafka client; retrying", extra={"error": repr(error)})
            return None
        try:
            read_committed.install(client)
            self.client = client  # the listener pauses held partitions on it
            client.subscribe(topics=list(self.settings.kafka_topics), listener=_Rebalances(self))
        except Exception:
            self.client = None
            client.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
            raise
        log.info("consuming", extra={"topics": list(self.settings.kafka_topics),
                                     "group": self.settings.kafka_group_id})
        return client

    def _hold_undecodable(self, client: KafkaConsumer) -> bool:
        """Find the partitions whose next batch cannot be decoded and hold them; True if any."""
        positions = {}
        for tp in client.assignment() - self.stalled.keys():
            try:
                positions[tp] = client.position(tp, timeout_ms=COMMIT_TIMEOUT_MS)
            except KafkaError:
                continue
        self._close()
        found = find_undecodable(self._servers(), positions)
        for tp, reason in found.items():
            stall = Stall(tp.topic, tp.partition, positions[tp], reason)
            self.stalled[tp] = stall
            if stall not in self._reported:
                self._reported.add(stall)
                log.error("cannot decode a batch; holding its partition (the others go on)",
                          extra={"topic": stall.topic, "partition": stall.partition,
                                 "offset": stall.offset, "reason": reason})
        self.telemetry.gauges.kafka_stalled((tp.topic, tp.partition) for tp in self.stalled)
        return bool(found)

    def take_assignment(self, assigned: set[TopicPartition]) -> None:
        """Hold the assigned partitions known to be undecodable or waiting for their tenants'
        rates; forget the others' stalls and waits."""
        self.stalled = {tp: stall for tp, stall in self.stalled.items() if tp in assigned}
        self.waiting = {tp: until for tp, until in self.waiting.items() if tp in assigned}
        self.telemetry.gauges.kafka_stalled((tp.topic, tp.partition) for tp in self.stalled)
        if (self.stalled or self.waiting) and self.client is not None:
            self.client.pause(*self.stalled, *self.waiting)
        group = self.settings.kafka_group_id
        try:
            stalls.clear(self.pool, group, assigned, held=self.stalled)
            stalls.record(self.pool, group, self.name, list(self.stalled.values()))
        except DatabaseError as error:
            log.warning("cannot update the stalled partitions in the database",
                        extra={"error": str(error)})

    def _servers(self) -> list[str]:
        return [s.strip() for s in self.settings.kafka_bootstrap_servers.split(",") if s.strip()]

    def _commit(self, client: KafkaConsumer, polled: Positions,
                held: dict[TopicPartition, Hold]) -> None:
        """Commit each partition of the batch past its last message, or up to its first
        waiting one."""
        offsets = {tp: OffsetAndMetadata(held[tp].offset if tp in held
                                         else records[-1].offset + 1, "", -1)
                   for tp, records in polled.items()}
        try:
            client.commit(offsets, timeout_ms=COMMIT_TIMEOUT_MS)
        except KafkaError as error:  # RebalanceInProgress, CommitFailed, timeout
            log.warning("offset commit refused; the batch will be read again and deduplicated",
                        extra={"error": repr(error)})

    def _measure_lag(self, client: KafkaConsumer) -> None:
        """Set each assigned partition's lag: its end (the high watermark of the last fetch)
        minus this worker's position, which after a commit is the committed offset.

        The fetch's watermark is used rather than `end_offsets()`, which costs a request and
        which some Kafka-protocol brokers (tansu) answer wrongly.
        """
        lags = {}
        try:
            for tp in client.assignment():
                end = client.highwater(tp)
                if end is not None:
                    lags[tp.topic, tp.partition] = max(0, end - client.position(tp))
        except KafkaError as error:  # a metric never costs the consumer its client
            log.debug("consumer lag not measured", extra={"error": repr(error)})
            return
        self.telemetry.gauges.kafka_lag(lags)

    def _rewind(self, client: KafkaConsumer, polled: Positions) -> None:
        """Make the next poll return the batch again (partitions still ours only)."""
        assigned = client.assignment()
        for tp, records in polled.items():
            if tp in assigned:
                client.seek(tp, records[0].offset)

    def _close(self) -> None:
        # partitions this worker no longer reads are not its lag
        self.telemetry.gauges.kafka_lag({})
        self.waiting = {}  # a new client reads them from their committed offsets
        client, self.client = self.client, None
        if client is not None:
            try:
                client.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
            except Exception:
                log.exception("closing the Kafka client failed")


class _Rebalances(ConsumerRebalanceListener):
    """Log which partitions this worker gains and loses, and hold the undecodable ones it
    gets (offsets need no action here: each batch is committed before the next poll, where
    rebalances happen)."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    def on_partitions_revoked(self, revoked) -> None:
        if revoked:
            log.info("partitions revoked", extra={"partitions": _names(revoked)})

    def on_partitions_assigned(self, assigned) -> None:
        log.info("partitions assigned", extra={"partitions": _names(assigned)})
        self.consumer.take_assignment(set(assigned))


def _holds(waiting: Waiting) -> dict[TopicPartition, Hold]:
    return {TopicPartition(*partition): hold for partition, hold in holds(
        ((record.topic, record.partition), record.offset, seconds)
        for record, seconds in waiting).items()}


def _names(partitions) -> list[str]:
    return sorted(f"{tp.topic}:{tp.partition}" for tp in partitions)


def _reachable(server: str) -> bool:
    host, _, port = server.rpartition(":") if ":" in server else (server, "", "9092")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except (OSError, ValueError):
        return False
    return True

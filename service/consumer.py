"""Kafka ingestion: broker messages become events and deliveries; offsets follow the database.

One greenlet per worker process polls a batch, reads each message (service.envelope),
stores the events with their fan-out (db.events.ingest, the path of `publishEvent`) and
the poison messages (db.rejected.store) in one transaction, and only then commits the
batch's offsets. Every step is safe to repeat: an event id and a rejected message's
position are stored at most once, so a batch read again after a crash, a refused commit
or a rebalance creates nothing new.

No failure ends the loop:
- database down: nothing is committed; the batch's partitions are rewound to the batch's
  first offsets and read again after a capped exponential pause;
- a value the database refuses: the batch is halved until the culprit stands alone; it is
  quarantined as `unstorable` and the rest is stored;
- broker down: kafka-python reconnects by itself; creating the client is retried;
- commit refused (rebalance, timeout): logged; the partition's next reader gets the batch
  again and stores nothing twice.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import gevent
import gevent.event
from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError

from db import events, rejected
from db.errors import DatabaseError, InvalidData
from db.events import IngestCounts, NewEvent
from db.pool import ConnectionPool
from db.rejected import Rejection
from service.envelope import Poison, parse
from service.settings import Settings
from service.telemetry import Telemetry

if TYPE_CHECKING:
    from kafka.consumer.fetcher import ConsumerRecord

    Positions = dict[TopicPartition, list[ConsumerRecord]]

log = logging.getLogger("webhooks.consumer")

POLL_TIMEOUT_MS = 500  # longest wait of one poll for messages; also how soon stop() is seen
COMMIT_TIMEOUT_MS = 10_000  # an offset commit not done by then counts as refused
CLOSE_TIMEOUT_MS = 2_000  # leaving the group on stop, at most
CONNECT_TIMEOUT = 2.0  # seconds to reach a bootstrap server before retrying
RETRY_CAP = 5.0  # seconds, longest pause between retries after a database or broker failure
STOP_GRACE = 3.0  # seconds stop() lets the batch in hand be stored and committed
MAX_REASON_LENGTH = 1000  # characters of an error message kept as a rejection's reason

# Raised for the value rather than the database: retrying the same value cannot help.
# (ValueError: psycopg2 refuses some strings before sending them, e.g. NUL characters.)
DATA_ERRORS = (InvalidData, ValueError)


@dataclass
class Progress:
    """What one consumer did since it started (for logs, tests and the benchmark)."""

    batches: int = 0
    messages: int = 0
    events: int = 0
    deliveries: int = 0
    rejected: int = 0


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
                    self._stopping.wait(min(RETRY_CAP, 0.1 * 2 ** min(failures, 10)))
        finally:
            self._close()

    def _consume_once(self) -> bool:
        """Poll one batch and ingest it; return False after a failure that wants a pause."""
        client = self.client or self._connect()
        if client is None:
            return False
        try:
            polled: Positions = client.poll(timeout_ms=POLL_TIMEOUT_MS)
        except KafkaError as error:
            log.warning("poll failed; starting a new Kafka client", extra={"error": repr(error)})
            self._close()
            return False
        if not polled or self._stopping.is_set():
            return True  # a batch polled after stop() is left for the group to read again
        try:
            self._ingest([record for records in polled.values() for record in records])
        except Exception as error:
            self._rewind(client, polled)
            log.warning("storing a batch failed; nothing committed, reading it again",
                        extra={"error": str(error), "error_type": type(error).__name__,
                               "messages": sum(map(len, polled.values()))},
                        exc_info=not isinstance(error, DatabaseError))
            return False
        self._commit(client, polled)
        return True

    # -- broker ----------------------------------------------------------------------------

    def _connect(self) -> KafkaConsumer | None:
        servers = [s.strip() for s in self.settings.kafka_bootstrap_servers.split(",")]
        # KafkaConsumer() leaks its network thread when it cannot bootstrap, so only build
        # one once a server answers.
        if not any(_reachable(server) for server in servers if server):
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
                max_poll_records=self.settings.kafka_batch_size,
                session_timeout_ms=session_ms,
                heartbeat_interval_ms=max(100, session_ms // 3),
                metrics_enabled=False,
            )
        except KafkaError as error:
            log.warning("cannot start the Kafka client; retrying", extra={"error": repr(error)})
            return None
        try:
            client.subscribe(topics=list(self.settings.kafka_topics), listener=_Rebalances())
        except Exception:
            client.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
            raise
        log.info("consuming", extra={"topics": list(self.settings.kafka_topics),
                                     "group": self.settings.kafka_group_id})
        self.client = client
        return client

    def _commit(self, client: KafkaConsumer, polled: Positions) -> None:
        offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1)
                   for tp, records in polled.items()}
        try:
            client.commit(offsets, timeout_ms=COMMIT_TIMEOUT_MS)
        except KafkaError as error:  # RebalanceInProgress, CommitFailed, timeout
            log.warning("offset commit refused; the batch will be read again and deduplicated",
                        extra={"error": repr(error)})

    def _rewind(self, client: KafkaConsumer, polled: Positions) -> None:
        """Make the next poll return the batch again (partitions still ours only)."""
        assigned = client.assignment()
        for tp, records in polled.items():
            if tp in assigned:
                client.seek(tp, records[0].offset)

    def _close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            try:
                client.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
            except Exception:
                log.exception("closing the Kafka client failed")

    # -- database --------------------------------------------------------------------------

    def _ingest(self, batch: Sequence[ConsumerRecord]) -> None:
        """Store a batch's events and rejections, all or (on a data error) each on its own."""
        goods: list[tuple[ConsumerRecord, NewEvent]] = []
        poisons: list[tuple[ConsumerRecord, Poison]] = []
        for record in batch:
            try:
                goods.append((record, self._parse(record)))
            except Poison as poison:
                poisons.append((record, poison))
        try:
            with self.pool.transaction() as cursor:
                counts = events.ingest(cursor, [event for _, event in goods], source="kafka")
                stored = rejected.store(cursor, [_rejection(r, p) for r, p in poisons])
        except DATA_ERRORS:
            counts, culprits = self._isolate(goods)
            poisons += [(record, Poison("unstorable", str(error))) for record, error in culprits]
            with self.pool.transaction() as cursor:
                stored = rejected.store(cursor, [_rejection(r, p) for r, p in poisons])
        kinds = {_position(record): poison.kind for record, poison in poisons}
        self._account(len(batch), counts, stored, kinds)

    def _parse(self, record: ConsumerRecord) -> NewEvent:
        try:
            return parse(record.value, topic=record.topic, partition=record.partition,
                         offset=record.offset, max_payload=self.settings.max_payload,
                         timestamp_ms=record.timestamp)
        except Poison:
            raise
        except Exception as error:  # a case the envelope rules missed: keep it, don't stall
            log.exception("reading a message failed", extra=dict(
                zip(("topic", "partition", "offset"), _position(record), strict=True)))
            raise Poison("unreadable", f"{type(error).__name__}: {error}") from error

    def _isolate(self, goods: list[tuple[ConsumerRecord, NewEvent]]
                 ) -> tuple[IngestCounts, list[tuple[ConsumerRecord, Exception]]]:
        """Store `goods` in halves until each value the database refuses stands alone."""
        try:
            with self.pool.transaction() as cursor:
                counts = events.ingest(cursor, [event for _, event in goods], source="kafka")
            return counts, []
        except DATA_ERRORS as error:
            if len(goods) == 1:
                return IngestCounts(0, 0), [(goods[0][0], error)]
        half = len(goods) // 2
        left, left_culprits = self._isolate(goods[:half])
        right, right_culprits = self._isolate(goods[half:])
        counts = IngestCounts(left.events_created + right.events_created,
                              left.deliveries_created + right.deliveries_created)
        return counts, left_culprits + right_culprits

    def _account(self, messages: int, counts: IngestCounts, stored: list[Rejection],
                 kinds: dict[tuple[str, int, int], str]) -> None:
        progress = self.progress
        progress.batches += 1
        progress.messages += messages
        progress.events += counts.events_created
        progress.deliveries += counts.deliveries_created
        progress.rejected += len(stored)
        self.telemetry.ingested("kafka", counts.events_created)
        for rejection in stored:
            self.telemetry.rejected(kinds[rejection.topic, rejection.partition, rejection.offset])
            log.warning("message rejected", extra={
                "topic": rejection.topic, "partition": rejection.partition,
                "offset": rejection.offset, "reason": rejection.reason,
                "bytes": None if rejection.raw is None else len(rejection.raw)})


class _Rebalances(ConsumerRebalanceListener):
    """Log which partitions this worker gains and loses (offsets need no action here:
    each batch is committed before the next poll, where rebalances happen)."""

    def on_partitions_revoked(self, revoked) -> None:
        if revoked:
            log.info("partitions revoked", extra={"partitions": _names(revoked)})

    def on_partitions_assigned(self, assigned) -> None:
        log.info("partitions assigned", extra={"partitions": _names(assigned)})


def _names(partitions) -> list[str]:
    return sorted(f"{tp.topic}:{tp.partition}" for tp in partitions)


def _rejection(record: ConsumerRecord, poison: Poison) -> Rejection:
    # Error texts may quote what they refused (a lone surrogate, a NUL): keep them storable.
    reason = poison.reason[:MAX_REASON_LENGTH].replace("\x00", "\\x00")
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    return Rejection(record.topic, record.partition, record.offset, reason, record.value)


def _position(record: ConsumerRecord) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset


def _reachable(server: str) -> bool:
    host, _, port = server.rpartition(":") if ":" in server else (server, "", "9092")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except (OSError, ValueError):
        return False
    return True

"""Produce a chaos run's events to Kafka, at a steady rate, and retry until each is acknowledged.

Every message carries its event id (`chaos-…`), as the docs advise producers to: a message
the producer itself had to send twice still names one event. A subclass may send other
messages too (`Producer.messages`): the poison scenario mixes in messages that are no event.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple

import gevent
import gevent.event
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.producer.future import RecordMetadata

from service.local.kafka import LocalKafka

PARTITIONS = 4
ROUNDS = 10  # times the producer sends a message again before the run gives up
ACK_TIMEOUT = 120.0  # seconds to wait for the broker to acknowledge what was sent


class Message(NamedTuple):
    event_id: str | None  # the event it carries; None for a message that is no event
    key: bytes
    value: bytes | None


class Producer:
    """A topic and a consumer group of their own on `broker`, and the events sent to it."""

    def __init__(self, broker: LocalKafka, options: Any, event_type: str,
                 hold_at: int | None = None) -> None:
        self.broker = broker
        self.options = options
        self.event_type = event_type
        self.hold_at = hold_at  # messages sent before the producer waits for `resume`
        self.resume = gevent.event.Event()
        suffix = uuid.uuid4().hex[:8]
        self.topic = f"chaos-{suffix}"
        self.group = f"chaos-{suffix}"
        self.resent = 0
        self.sent: list[Message] = []  # in the order sent
        self.sent_at: list[float] = []  # Unix time each message of `sent` was first sent
        self.acknowledged: dict[int, tuple[int, int]] = {}  # index in sent -> (partition, offset)
        broker.create_topic(self.topic, PARTITIONS)

    def settings(self) -> dict[str, str]:
        """Return the worker settings that consume this topic in this group."""
        return {"KAFKA_BOOTSTRAP_SERVERS": self.broker.bootstrap, "KAFKA_TOPICS": self.topic,
                "KAFKA_GROUP_ID": self.group,
                "WEBHOOKS_KAFKA_SESSION_TIMEOUT": f"{self.options.session_timeout}s"}

    @property
    def acknowledged_ends(self) -> dict[int, int]:
        """Return, per partition, the last offset the broker acknowledged + 1."""
        ends: dict[int, int] = {}
        for partition, offset in self.acknowledged.values():
            ends[partition] = max(ends.get(partition, 0), offset + 1)
        return ends

    def messages(self, ids: list[str]) -> Iterator[Message]:
        """Yield the messages to send: one event per id."""
        for id in ids:
            value = json.dumps({"type": self.event_type, "id": id, "payload": {"n": id}})
            yield Message(id, id.encode(), value.encode())

    def produce(self, ids: list[str], published: dict[str, str]) -> None:
        """Send `messages(ids)`, `options.rate` per second (holding after `hold_at` of them
        until `resume` is set); wait until all are acknowledged."""
        producer = KafkaProducer(bootstrap_servers=self.broker.bootstrap, linger_ms=5)
        try:
            started = time.monotonic()
            self.sent = list(self.messages(ids))
            pending = {}
            for n, message in enumerate(self.sent):
                if n == self.hold_at:
                    self.resume.wait()
                    started = time.monotonic() - n / self.options.rate  # the same pace after
                pending[n] = producer.send(self.topic, message.value, key=message.key)
                self.sent_at.append(time.time())
                if message.event_id is not None:
                    published[message.event_id] = self.event_type
                ahead = started + (n + 1) / self.options.rate - time.monotonic()
                if ahead > 0:
                    gevent.sleep(ahead)
            for _ in range(ROUNDS):
                producer.flush(timeout=ACK_TIMEOUT)
                failed = []
                for n, future in pending.items():
                    metadata = _acknowledged(future)
                    if metadata is None:
                        failed.append(n)
                    else:
                        self.acknowledged[n] = (metadata.partition, metadata.offset)
                if not failed:
                    return
                self.resent += len(failed)
                pending = {n: producer.send(self.topic, self.sent[n].value, key=self.sent[n].key)
                           for n in failed}
            raise RuntimeError(f"{len(pending)} messages never acknowledged by the broker")
        finally:
            producer.close(timeout=10)

    def counts(self) -> dict[str, int]:
        return {"messages_resent_by_producer": self.resent}


def _acknowledged(future) -> RecordMetadata | None:
    try:
        return future.get(timeout=0)
    except KafkaError:
        return None


def committed_and_end_offsets(producer: Producer) -> dict[str, Any]:
    """Return the group's committed offsets and the topic's end offsets, per partition.

    The end offsets come from reading the whole topic (tansu answers ListOffsets with stale
    values), at least up to the last offset the broker acknowledged to the producer.
    """
    admin = KafkaAdminClient(bootstrap_servers=producer.broker.bootstrap)
    try:
        group = admin.list_group_offsets(producer.group)[producer.group]
    finally:
        admin.close()
    committed = {tp.partition: meta.offset for tp, meta in group.items()
                 if tp.topic == producer.topic and meta.offset >= 0}
    end, messages = _read_to_the_end(producer)
    return {"committed": dict(sorted(committed.items())), "end": dict(sorted(end.items())),
            "messages_in_topic": messages}


def _read_to_the_end(producer: Producer) -> tuple[dict[int, int], int]:
    """Read every message of the topic; return the end offset per partition and the count."""
    consumer = KafkaConsumer(bootstrap_servers=producer.broker.bootstrap,
                             enable_auto_commit=False)
    end = dict(producer.acknowledged_ends)
    messages = 0
    try:
        consumer.assign([TopicPartition(producer.topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + ACK_TIMEOUT
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=1000)
            for tp, records in batch.items():
                messages += len(records)
                end[tp.partition] = max(end.get(tp.partition, 0), records[-1].offset + 1)
            if not batch and all(consumer.position(TopicPartition(producer.topic, p)) >= offset
                                 for p, offset in end.items()):
                break
    finally:
        consumer.close()
    return end, messages

"""Produce a chaos run's events to Kafka, at a steady rate, and retry until each is acknowledged.

Every message carries its event id (`chaos-…`), as the docs advise producers to: a message
the producer itself had to send twice still names one event.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import gevent
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.producer.future import RecordMetadata

from service.local_kafka import LocalKafka

PARTITIONS = 4
ROUNDS = 10  # times the producer sends a message again before the run gives up
ACK_TIMEOUT = 120.0  # seconds to wait for the broker to acknowledge what was sent


class Producer:
    """A topic and a consumer group of their own on `broker`, and the events sent to it."""

    def __init__(self, broker: LocalKafka, options: Any, event_type: str) -> None:
        self.broker = broker
        self.options = options
        self.event_type = event_type
        suffix = uuid.uuid4().hex[:8]
        self.topic = f"chaos-{suffix}"
        self.group = f"chaos-{suffix}"
        self.resent = 0
        self.acknowledged_ends: dict[int, int] = {}  # partition -> last acknowledged offset + 1
        broker.create_topic(self.topic, PARTITIONS)

    def settings(self) -> dict[str, str]:
        """Return the worker settings that consume this topic in this group."""
        return {"KAFKA_BOOTSTRAP_SERVERS": self.broker.bootstrap, "KAFKA_TOPICS": self.topic,
                "KAFKA_GROUP_ID": self.group,
                "WEBHOOKS_KAFKA_SESSION_TIMEOUT": f"{self.options.session_timeout}s"}

    def produce(self, ids: list[str], published: dict[str, str]) -> None:
        """Send one message per id, `options.rate` per second; wait until all are acknowledged."""
        producer = KafkaProducer(bootstrap_servers=self.broker.bootstrap, linger_ms=5)
        try:
            started = time.monotonic()
            pending = {}
            for n, id in enumerate(ids):
                pending[id] = self._send(producer, id)
                published[id] = self.event_type
                ahead = started + (n + 1) / self.options.rate - time.monotonic()
                if ahead > 0:
                    gevent.sleep(ahead)
            for _ in range(ROUNDS):
                producer.flush(timeout=ACK_TIMEOUT)
                failed = []
                for id, future in pending.items():
                    metadata = _acknowledged(future)
                    if metadata is None:
                        failed.append(id)
                    else:
                        self.acknowledged_ends[metadata.partition] = max(
                            self.acknowledged_ends.get(metadata.partition, 0),
                            metadata.offset + 1)
                if not failed:
                    return
                self.resent += len(failed)
                pending = {id: self._send(producer, id) for id in failed}
            raise RuntimeError(f"{len(pending)} messages never acknowledged by the broker")
        finally:
            producer.close(timeout=10)

    def counts(self) -> dict[str, int]:
        return {"messages_resent_by_producer": self.resent}

    def _send(self, producer: KafkaProducer, id: str):
        value = json.dumps({"type": self.event_type, "id": id, "payload": {"n": id}}).encode()
        return producer.send(self.topic, value, key=id.encode())


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

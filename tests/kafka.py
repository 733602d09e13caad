"""Kafka fixtures: one tansu broker per session, a fresh topic and group per test.

Groups use a 2 s session (tansu holds a join for about half of it, see TRAPS.md), so a
consumer starts reading about a second after it subscribes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from service.local_kafka import LocalKafka

PARTITIONS = 4
SESSION_TIMEOUT = 2.0  # seconds


class Topic:
    """A topic of the test broker, with a producer that remembers where each message went."""

    def __init__(self, broker: LocalKafka, name: str) -> None:
        self.broker = broker
        self.name = name
        self.sent: list[tuple[int, int]] = []  # (partition, offset) of each message sent
        self._producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5,
                                       max_request_size=8 * 1024 * 1024)

    def send(self, value: Any, *, key: str | None = None, raw: bool = False,
             partition: int | None = None) -> tuple[int, int]:
        """Produce one message (a JSON document unless `raw`) and return its position."""
        data = value if raw or value is None else json.dumps(value).encode()
        if key is None and data is None:
            key = "tombstone"  # Kafka needs a key or a value
        future = self._producer.send(self.name, data, key=None if key is None else key.encode(),
                                     partition=partition)
        metadata = future.get(timeout=10)
        self.sent.append((metadata.partition, metadata.offset))
        return metadata.partition, metadata.offset

    def send_many(self, values: list[Any]) -> list[tuple[int, int]]:
        """Produce messages spread over the partitions (keyed by their index); wait for all."""
        futures = [self._producer.send(self.name, json.dumps(value).encode(),
                                       key=str(n).encode())
                   for n, value in enumerate(values)]
        self._producer.flush(timeout=30)
        positions = [(f.get().partition, f.get().offset) for f in futures]
        self.sent.extend(positions)
        return positions

    def ends(self) -> dict[int, int]:
        """Return, per partition written to, the offset after its last message sent."""
        ends: dict[int, int] = {}
        for partition, offset in self.sent:
            ends[partition] = max(ends.get(partition, 0), offset + 1)
        return ends

    def committed(self, group: str) -> dict[int, int]:
        """Return the offsets `group` committed on this topic, per partition."""
        admin = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        try:
            offsets = admin.list_group_offsets(group)[group]
        finally:
            admin.close()
        return {tp.partition: meta.offset for tp, meta in offsets.items()
                if tp.topic == self.name and meta.offset >= 0}

    def close(self) -> None:
        self._producer.close(timeout=5)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(broker: LocalKafka, partitions: int = PARTITIONS) -> Topic:
    name = unique("events")
    broker.create_topic(name, partitions)
    return Topic(broker, name)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafka]:
    """The session's broker (memory only; every test uses its own topics and groups)."""
    with LocalKafka() as broker:
        yield broker


@pytest.fixture
def own_broker() -> Iterator[LocalKafka]:
    """A broker of this test alone, free to be paused (frozen) or stopped."""
    with LocalKafka() as broker:
        yield broker


@pytest.fixture
def topic(kafka_broker) -> Iterator[Topic]:
    """A new topic with four partitions on the session's broker."""
    created = new_topic(kafka_broker)
    yield created
    created.close()


def consumer_settings(topic: Topic, group: str | None = None) -> dict[str, Any]:
    """Settings overrides for a worker consuming `topic` in `group` (a new one if None)."""
    return {
        "kafka_bootstrap_servers": topic.broker.bootstrap,
        "kafka_topics": (topic.name,),
        "kafka_group_id": group or unique("group"),
        "kafka_session_timeout": SESSION_TIMEOUT,
    }

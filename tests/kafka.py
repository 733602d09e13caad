"""Kafka fixtures: one tansu broker per session, a fresh topic and group per test.

Groups use a 2 s session (tansu holds a join for about half of it), so a consumer starts
reading about a second after it subscribes. On a busy machine a worker may miss a heartbeat
and its group rebalance: tests then wait for what they expect (tests.helpers.wait_until,
every error a "not yet") and count what must hold after any rebalance — events stored,
offsets committed — never how often a batch was read.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from kafka import (
    KafkaAdminClient,
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    TopicPartition,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from service.local.kafka import LocalKafka
from service.local.ports import reserve_port
from tests.helpers import PATIENCE

PARTITIONS = 4
SESSION_TIMEOUT = 2.0  # seconds
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")  # Kafka's compressions, by attribute code
LIBRARIES = ("kafka-python", "confluent-kafka")  # pure Python, and librdkafka
PRODUCE_TIMEOUT = PATIENCE  # seconds a flush or a transaction step may take
LARGE_BATCH_LINGER_MS = 60_000  # longer than producing any test's batch; flush() sends at once
Headers = list[tuple[str, bytes | None]]


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
        metadata = future.get(timeout=PATIENCE)
        self.sent.append((metadata.partition, metadata.offset))
        return metadata.partition, metadata.offset

    def send_many(self, values: list[Any]) -> list[tuple[int, int]]:
        """Produce messages spread over the partitions (keyed by their index); wait for all."""
        futures = [self._producer.send(self.name, json.dumps(value).encode(),
                                       key=str(n).encode())
                   for n, value in enumerate(values)]
        self._producer.flush(timeout=PATIENCE)
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
        self._producer.close(timeout=PATIENCE)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(broker: LocalKafka, partitions: int = PARTITIONS) -> Topic:
    name = unique("events")
    broker.create_topic(name, partitions)
    return Topic(broker, name)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafka]:
    """The session's broker (memory only; every test uses its own topics and groups)."""
    with LocalKafka(port=reserve_port()) as broker:
        yield broker


@pytest.fixture
def own_broker() -> Iterator[LocalKafka]:
    """A broker of this test alone, free to be paused (frozen) or stopped."""
    with LocalKafka(port=reserve_port()) as broker:
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


class Producer:
    """A producer of either client library behind one small interface.

    `codec` compresses every batch; `idempotent` and `transactional_id` turn on the
    producer's own exactly-once machinery; `large_batches` lets one batch grow to several
    megabytes: nothing is sent before flush(), however slowly the test produces.
    """

    def __init__(self, library: str, broker: LocalKafka, *, codec: str = "none",
                 idempotent: bool = False, transactional_id: str | None = None,
                 large_batches: bool = False) -> None:
        self.library = library
        if library == "kafka-python":
            options: dict[str, Any] = {
                "bootstrap_servers": broker.bootstrap, "linger_ms": 5,
                "compression_type": None if codec == "none" else codec,
                "enable_idempotence": idempotent or bool(transactional_id),
                "transactional_id": transactional_id,
                "max_request_size": 32 * 1024 * 1024}
            if large_batches:
                options.update(batch_size=16 * 1024 * 1024, linger_ms=LARGE_BATCH_LINGER_MS)
            self._client = KafkaProducer(**options)
        elif library == "confluent-kafka":
            config: dict[str, Any] = {
                "bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                "compression.type": codec,
                "enable.idempotence": idempotent or bool(transactional_id),
                "message.max.bytes": 32 * 1024 * 1024, "log_level": 3}
            if transactional_id:
                config["transactional.id"] = transactional_id
            if large_batches:
                config.update({"batch.size": 16 * 1024 * 1024, "batch.num.messages": 1_000_000,
                               "linger.ms": LARGE_BATCH_LINGER_MS})
            self._client = confluent_kafka.Producer(config)
        else:
            raise ValueError(f"unknown Kafka client library {library!r}")
        if transactional_id:
            self._call("init_transactions")

    def send(self, topic: str, value: Any, *, key: bytes | None = None,
             headers: Headers | None = None, partition: int | None = None,
             timestamp_ms: int | None = None) -> None:
        """Queue one message (a JSON document unless bytes); flush() waits for it."""
        data = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()
        if self.library == "kafka-python":
            self._client.send(topic, data, key=key, headers=headers, partition=partition,
                              timestamp_ms=timestamp_ms)
            return
        extra: dict[str, Any] = {}
        if partition is not None:
            extra["partition"] = partition
        if timestamp_ms is not None:
            extra["timestamp"] = timestamp_ms
        while True:
            try:
                self._client.produce(topic, data, key=key, headers=headers, **extra)
                return
            except BufferError:  # librdkafka's local queue is full: let it drain
                self._client.poll(0.1)

    def flush(self) -> None:
        if self.library == "kafka-python":
            self._client.flush(timeout=PRODUCE_TIMEOUT)
        elif self._client.flush(PRODUCE_TIMEOUT):
            raise AssertionError("confluent-kafka did not deliver every message in time")

    def begin(self) -> None:
        self._client.begin_transaction()

    def commit(self) -> None:
        self._call("commit_transaction")

    def abort(self) -> None:
        self.flush()
        self._call("abort_transaction")

    def close(self) -> None:
        if self.library == "kafka-python":
            self._client.close(timeout=5)
        else:
            self._client.flush(5)
            self._client = None  # librdkafka stops its threads when the last reference goes

    def _call(self, method: str) -> None:
        if self.library == "kafka-python":
            getattr(self._client, method)()
        else:
            getattr(self._client, method)(PRODUCE_TIMEOUT)


@pytest.fixture
def producers(kafka_broker) -> Iterator:
    """Make Producers on the session's broker (see Producer); all closed at teardown."""
    made: list[Producer] = []

    def make(library: str, **options: Any) -> Producer:
        producer = Producer(library, kafka_broker, **options)
        made.append(producer)
        return producer

    yield make
    for producer in made:
        producer.close()


def corrupt_batch(values: list[bytes]) -> bytes:
    """Return a record batch of `values` whose checksum is wrong (as after a bit flip)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for value in values:
        builder.append(0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    batch = bytearray(builder.build())
    crc_at = 17  # base offset (8), length (4), leader epoch (4), magic (1), then the CRC
    (crc,) = struct.unpack_from(">I", batch, crc_at)
    struct.pack_into(">I", batch, crc_at, crc ^ 0xFFFF)
    return bytes(batch)


def produce_raw(broker: LocalKafka, topic: str, partition: int, batch: bytes) -> None:
    """Append the record batch `batch` as given (no client checks it) to a partition."""
    data = ProduceRequest.TopicProduceData
    topic_data = [data(name=topic, partition_data=[
        data.PartitionProduceData(index=partition, records=batch)])]
    request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=int(PATIENCE * 1000),
                             topic_data=topic_data)
    response = _round_trip(broker, request, ProduceResponse, version=7)
    (errors,) = [[p.error_code for p in t.partition_responses] for t in response.responses]
    if errors != [0]:
        raise AssertionError(f"the broker refused the batch: error {errors}")


def skip_to(broker: LocalKafka, group: str, topic: str, partition: int, *, offset: int) -> None:
    """Commit `offset` for `group` on a partition, as an operator does (the group is idle)."""
    client = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                           enable_auto_commit=False)
    try:
        position = TopicPartition(topic, partition)
        client.assign([position])
        client.commit({position: OffsetAndMetadata(offset, "", -1)})
    finally:
        client.close(autocommit=False)


def fetch_committed(broker: LocalKafka, topic: str, partition: int) -> Any:
    """Fetch a partition from offset 0 as a read_committed client does; return the
    broker's answer for it (last stable offset, aborted transactions, records)."""
    wanted = FetchRequest.FetchTopic
    request = FetchRequest(
        replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
        topics=[wanted(topic=topic, partitions=[wanted.FetchPartition(
            partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])])
    response = _round_trip(broker, request, FetchResponse, version=4)
    (answer,) = [p for t in response.responses for p in t.partitions]
    return answer


def batches_on_wire(broker: LocalKafka, topic: str, partition: int) -> list[tuple[str, int]]:
    """Return (compression as named in CODECS, records) of the first batches of a partition
    (up to a megabyte of them), as the broker stored them."""
    records = MemoryRecords(bytes(fetch_committed(broker, topic, partition).records or b""))
    batches = []
    while (batch := records.next_batch()) is not None:
        batches.append((CODECS[batch.compression_type], sum(1 for _ in batch)))
    return batches


def _round_trip(broker: LocalKafka, request: Any, response_class: Any, *, version: int) -> Any:
    """Send one protocol request to the broker on a fresh connection; return its answer."""
    request.API_VERSION = version
    request.with_header(correlation_id=1, client_id="tests")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=PATIENCE) as connection:
        connection.sendall(request.encode(version=version, header=True, framed=True))
        (size,) = struct.unpack(">i", connection.recv(4, socket.MSG_WAITALL))
        reply = connection.recv(size, socket.MSG_WAITALL)
    return response_class.decode(reply, version=version, header=True)

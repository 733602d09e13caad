"""Real producers on the embedded broker, kafka-python and librdkafka (confluent-kafka), with
their exactly-once machinery: transactions are read committed (aborted ones never stored, a
long one flows or holds its partition, never guessed) and idempotent producers flow."""

from __future__ import annotations

import json

import pytest

from service.ingest import read_committed
from tests.helpers import wait_until
from tests.kafka import LIBRARIES, consumer_settings, unique
from tests.kafka_events import stored_names

pytestmark = pytest.mark.parametrize("library", LIBRARIES)


def test_transactions_are_read_committed(library, make, producers, topic, start_worker):
    transactional = producers(library, transactional_id=unique("tx"))
    plain = producers(library)
    transactional.begin()
    for n in range(5):
        transactional.send(topic.name, {"type": "t", "name": f"committed-{n}"}, partition=0)
    transactional.commit()
    transactional.begin()
    for n in range(3):
        transactional.send(topic.name, {"type": "t", "name": f"open-{n}"}, partition=0)
    transactional.flush()  # written to the partition, not yet committed
    for n in range(2):
        plain.send(topic.name, {"type": "t", "name": f"behind-{n}"}, partition=0)
    for partition in (1, 2, 3):
        plain.send(topic.name, {"type": "t", "name": f"elsewhere-{partition}"},
                   partition=partition)
    plain.flush()
    kafka = consumer_settings(topic)
    worker = start_worker(**kafka)

    committed = [f"committed-{n}" for n in range(5)]
    elsewhere = [f"elsewhere-{p}" for p in (1, 2, 3)]
    # The open transaction holds partition 0 (nothing of it or behind it is read); the
    # other partitions flow, and the committed transaction is stored once.
    wait_until(lambda: stored_names(make) == sorted(committed + elsewhere))
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == {0: 5, 1: 1, 2: 1, 3: 1})
    assert stored_names(make) == sorted(committed + elsewhere)

    transactional.commit()
    opened = [f"open-{n}" for n in range(3)]
    behind = [f"behind-{n}" for n in range(2)]
    wait_until(lambda: stored_names(make) == sorted(committed + elsewhere + opened + behind))
    assert worker.consumer.progress.rejected == 0


def test_aborted_transactions_are_never_stored(library, make, producers, topic, receiver,
                                               start_worker):
    """The embedded broker lists no aborted transaction in its fetch answers: the consumer
    finds them from the transaction markers (service/ingest/read_committed.py)."""
    make.config(endpoint=receiver.url, event_types=["t"])
    first, second = (producers(library, transactional_id=unique("tx")) for _ in range(2))
    plain = producers(library)

    def transaction(producer, partition, name, *, commit):
        producer.begin()
        for n in range(5):
            producer.send(topic.name, {"type": "t", "name": f"{name}-{n}"}, partition=partition)
        if commit:
            producer.commit()
        else:
            producer.abort()

    transaction(first, 0, "committed", commit=True)  # committed, then aborted
    transaction(first, 0, "aborted", commit=False)
    transaction(first, 1, "aborted-first", commit=False)  # aborted, then committed
    transaction(first, 1, "committed-next", commit=True)
    first.begin()  # two producers' transactions interleaved in one partition
    second.begin()
    for n in range(5):
        for producer, name in ((first, "interleaved-committed"), (second, "interleaved-aborted")):
            producer.send(topic.name, {"type": "t", "name": f"{name}-{n}"}, partition=2)
            producer.flush()  # one batch each: the log alternates between the producers
    second.abort()
    first.commit()
    for partition in range(4):
        plain.send(topic.name, {"type": "t", "name": f"behind-{partition}"}, partition=partition)
    plain.flush()
    worker = start_worker(**consumer_settings(topic))

    behind = [f"behind-{p}" for p in range(4)]
    stored = sorted([f"{name}-{n}" for n in range(5)
                     for name in ("committed", "committed-next", "interleaved-committed")]
                    + behind)
    # Each partition is read in order: once its last message is stored, all of it was read.
    wait_until(lambda: set(behind) <= set(stored_names(make)))
    assert stored_names(make) == stored
    delivered = receiver.wait_for(len(stored))
    assert sorted(json.loads(r.body)["data"]["name"] for r in delivered) == stored
    assert make.count("SELECT count(*) FROM deliveries") == len(stored)
    assert (worker.consumer.progress.rejected, worker.consumer.stalled) == (0, {})


def _long_transaction(producer, topic: str, names: str) -> None:
    """Commit 8 batches of 1 MB in one transaction on partition 0: more than one answer of the
    embedded broker (about 5 MB of a partition)."""
    producer.begin()
    for n in range(8):
        producer.send(topic, {"type": "t", "name": f"{names}-{n}", "pad": "x" * 1_000_000},
                      partition=0)
        producer.flush()
    producer.commit()


def test_a_transaction_longer_than_one_fetch_flows_from_a_broker_not_seen_to_omit_aborts(
        library, make, producers, topic, start_worker, monkeypatch):
    """A broker is trusted until it shows it omits the aborted transactions: Apache Kafka
    sends the list empty when nothing was aborted, and a committed transaction of any size
    must then flow."""
    monkeypatch.setattr(read_committed, "_CLUSTERS", {})  # a process new to this broker
    _long_transaction(producers(library, transactional_id=unique("tx")), topic.name, "long")
    worker = start_worker(**consumer_settings(topic))
    wait_until(lambda: len(stored_names(make)) == 8)
    assert sorted(stored_names(make)) == [f"long-{n}" for n in range(8)]
    assert worker.consumer.stalled == {}


def test_a_transaction_longer_than_one_fetch_holds_its_partition_and_says_so(
        library, make, producers, topic, start_worker):
    """What remains on a broker that lists no aborted transaction, once it has shown so: a
    transaction whose marker lies beyond the first answer cannot be told committed or
    aborted. Its partition is held, never guessed."""
    transactional = producers(library, transactional_id=unique("tx"))
    transactional.begin()  # an abort the broker will not list: offsets 0 and its marker 1
    transactional.send(topic.name, {"type": "t", "name": "aborted"}, partition=0)
    transactional.flush()
    transactional.abort()
    _long_transaction(transactional, topic.name, "long")  # from offset 2
    plain = producers(library)
    plain.send(topic.name, {"type": "t", "name": "elsewhere"}, partition=1)
    plain.flush()
    worker = start_worker(**consumer_settings(topic))

    wait_until(lambda: len(worker.consumer.stalled) == 1)
    (held,) = worker.consumer.stalled.values()
    assert (held.partition, held.offset) == (0, 2)
    assert held.reason.startswith(f"UndecidedTransactionError: partition {topic.name}:0: the "
                                  "transaction at offset 2 does not end within one fetch")
    wait_until(lambda: stored_names(make) == ["elsewhere"])


def test_idempotent_producers(library, make, producers, topic, start_worker):
    producer = producers(library, idempotent=True, codec="lz4")
    for n in range(200):
        producer.send(topic.name, {"type": "t", "name": f"i-{n:03}"}, key=str(n).encode())
    producer.flush()
    kafka = consumer_settings(topic)
    start_worker(**kafka)

    wait_until(lambda: stored_names(make) == [f"i-{n:03}" for n in range(200)])

"""Real producers on the embedded broker, kafka-python and librdkafka (confluent-kafka): a batch
the consumer cannot decode (corrupt, or of a codec whose library is missing) holds its
partition and says so, the others flow, and a held partition is found again or skipped."""

from __future__ import annotations

import logging

import kafka.codec
import pytest
import requests

from db import stalls
from service.local.ports import reserve_port
from tests.helpers import PROBE_TIMEOUT, wait_until
from tests.integration.test_telemetry import samples
from tests.kafka import (
    LIBRARIES,
    batches_on_wire,
    consumer_settings,
    corrupt_batch,
    produce_raw,
    skip_to,
)
from tests.kafka_events import stored_names

pytestmark = pytest.mark.parametrize("library", LIBRARIES)


def test_undecodable_batches_hold_their_partitions_and_say_so(
        library, make, producers, topic, kafka_broker, start_worker, caplog):
    producer = producers(library)
    for partition in (0, 3):
        producer.send(topic.name, {"type": "t", "name": f"before-{partition}"},
                      partition=partition)
    producer.flush()
    for partition in (0, 3):
        produce_raw(kafka_broker, topic.name, partition, corrupt_batch([b'{"type": "t"}'] * 3))
    for partition in range(4):
        producer.send(topic.name, {"type": "t", "name": f"behind-{partition}"},
                      partition=partition)
    producer.flush()
    port = reserve_port()
    kafka = consumer_settings(topic)
    caplog.set_level(logging.ERROR, logger="webhooks.consumer")
    worker = start_worker(**kafka, metrics_port=port)

    flowing = ["before-0", "before-3", "behind-1", "behind-2"]
    wait_until(lambda: stored_names(make) == flowing)
    wait_until(lambda: len(worker.consumer.stalled) == 2)
    held = sorted(worker.consumer.stalled.values(), key=lambda s: s.partition)
    assert [(s.topic, s.partition, s.offset) for s in held] == [(topic.name, 0, 1),
                                                                 (topic.name, 3, 1)]
    assert all(s.reason.startswith("CorruptRecordError") for s in held)
    # The others keep flowing while partitions 0 and 3 are held; nothing is skipped.
    producer.send(topic.name, {"type": "t", "name": "later"}, partition=2)
    producer.flush()
    wait_until(lambda: stored_names(make) == sorted([*flowing, "later"]))
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == {0: 1, 1: 1, 2: 2, 3: 1})

    assert _readiness(port) == {"status": "kafka partitions stalled",
                                "partitions": [f"{topic.name}:0@1", f"{topic.name}:3@1"]}
    assert _stalled_gauge(port) == {(topic.name, "0"): 1, (topic.name, "3"): 1}
    rows = wait_until(lambda: len(r := stalls.listed(make.pool)) == 2 and r)
    assert sorted((r.group_id, r.topic, r.partition, r.offset, r.worker, r.reason)
                  for r in rows) == [
        (kafka["kafka_group_id"], topic.name, s.partition, 1, worker.name, s.reason)
        for s in held]
    logged = [r for r in caplog.records if r.getMessage().startswith("cannot decode a batch")]
    assert sorted((r.topic, r.partition, r.offset) for r in logged) == [(topic.name, 0, 1),
                                                                        (topic.name, 3, 1)]


def test_a_batch_whose_codec_library_is_missing_holds_its_partition_until_installed(
        library, make, producers, topic, kafka_broker, start_worker, caplog, monkeypatch):
    """The consumer without python-snappy: the client cannot decompress a snappy batch."""
    snappy, plain = producers(library, codec="snappy"), producers(library)
    for n in range(3):  # compressible: librdkafka sends a batch uncompressed when that is smaller
        snappy.send(topic.name, {"type": "t", "name": f"snappy-{n}", "pad": "x" * 200},
                    partition=1)
    snappy.flush()
    for partition in range(4):
        plain.send(topic.name, {"type": "t", "name": f"behind-{partition}"}, partition=partition)
    plain.flush()
    assert batches_on_wire(kafka_broker, topic.name, 1) == [("snappy", 3), ("none", 1)]
    monkeypatch.setattr(kafka.codec, "has_snappy", lambda: False)  # this process only
    port = reserve_port()
    kafka_settings = consumer_settings(topic)
    caplog.set_level(logging.ERROR, logger="webhooks.consumer")
    worker = start_worker(**kafka_settings, metrics_port=port)

    held = wait_until(lambda: list(worker.consumer.stalled.values()))
    assert [(s.topic, s.partition, s.offset, s.reason) for s in held] == [
        (topic.name, 1, 0, "UnsupportedCodecError: Libraries for snappy compression codec not "
                           "found")]
    flowing = ["behind-0", "behind-2", "behind-3"]
    wait_until(lambda: stored_names(make) == flowing)
    plain.send(topic.name, {"type": "t", "name": "later"}, partition=3)
    plain.flush()
    wait_until(lambda: stored_names(make) == sorted([*flowing, "later"]))
    assert _readiness(port) == {"status": "kafka partitions stalled",
                                "partitions": [f"{topic.name}:1@0"]}
    assert _stalled_gauge(port) == {(topic.name, "1"): 1}
    logged = [r for r in caplog.records if r.getMessage().startswith("cannot decode a batch")]
    assert [(r.topic, r.partition, r.offset, r.reason) for r in logged] == [
        (topic.name, 1, 0, held[0].reason)]
    worker.stop()

    monkeypatch.undo()  # the package installed, the worker restarted: nothing was skipped
    start_worker(**kafka_settings)
    wait_until(lambda: stored_names(make) == sorted([*flowing, "later", "behind-1",
                                               *(f"snappy-{n}" for n in range(3))]))
    wait_until(lambda: stalls.listed(make.pool) == [])


def test_a_held_partition_is_read_again_by_the_next_worker_and_can_be_skipped(
        library, make, producers, topic, kafka_broker, start_worker):
    producer = producers(library)
    produce_raw(kafka_broker, topic.name, 1, corrupt_batch([b'{"type": "t"}']))
    producer.send(topic.name, {"type": "t", "name": "behind"}, partition=1)
    producer.send(topic.name, {"type": "t", "name": "elsewhere"}, partition=0)
    producer.flush()
    kafka = consumer_settings(topic)
    first = start_worker(**kafka)
    wait_until(lambda: [(r.partition, r.worker) for r in stalls.listed(make.pool)] == [
        (1, first.name)])
    first.stop()

    second = start_worker(**kafka)  # the same group: it gets the partition and finds it again
    wait_until(lambda: [(r.partition, r.offset, r.worker) for r in stalls.listed(make.pool)]
               == [(1, 0, second.name)])
    assert [(s.partition, s.offset) for s in second.consumer.stalled.values()] == [(1, 0)]
    producer.send(topic.name, {"type": "t", "name": "later"}, partition=0)
    producer.flush()
    wait_until(lambda: stored_names(make) == ["elsewhere", "later"])
    second.stop()

    # The operator's way out for a batch that cannot be repaired: the group's offset moved
    # past it while no worker runs. The next worker reads on, and the stall is gone.
    skip_to(kafka_broker, kafka["kafka_group_id"], topic.name, 1, offset=1)
    third = start_worker(**kafka)
    wait_until(lambda: stored_names(make) == ["behind", "elsewhere", "later"])
    wait_until(lambda: stalls.listed(make.pool) == [])
    assert not third.consumer.stalled


def _stalled_gauge(port: int) -> dict[tuple[str, str], float]:
    """Return the worker's webhooks_kafka_stalled_partitions series by (topic, partition)."""
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=PROBE_TIMEOUT).text
    return {(dict(labels)["topic"], dict(labels)["partition"]): value
            for (name, labels), value in samples(text).items()
            if name == "webhooks_kafka_stalled_partitions"}


def _readiness(port: int) -> dict:
    """Return the body of the worker's /readyz once it answers 503 (not ready)."""
    return wait_until(lambda: (r := requests.get(f"http://127.0.0.1:{port}/readyz",
                                                  timeout=PROBE_TIMEOUT)).status_code == 503
                      and r.json())  # a Response of 503 is falsy

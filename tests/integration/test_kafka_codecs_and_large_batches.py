"""Real producers on the embedded broker, kafka-python and librdkafka (confluent-kafka):
every compression codec, and batches of thousands of messages and several megabytes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import wait_until
from tests.kafka import CODECS, LIBRARIES, Topic, batches_on_wire, consumer_settings, new_topic
from tests.kafka_events import stored_events

pytestmark = pytest.mark.parametrize("library", LIBRARIES)


@pytest.fixture
def codec_topic(kafka_broker) -> Iterator[Topic]:
    """A topic with one partition per codec."""
    created = new_topic(kafka_broker, partitions=len(CODECS))
    yield created
    created.close()


def test_every_compression_codec_is_consumed(library, make, producers, kafka_broker,
                                             codec_topic, start_worker):
    topic = codec_topic
    sent = []
    for partition, codec in enumerate(CODECS):
        producer = producers(library, codec=codec)
        for n in range(10):
            # compressible: librdkafka sends a batch uncompressed when that is smaller
            producer.send(topic.name, {"type": "t", "id": f"{codec}-{n}", "pad": "x" * 200},
                          partition=partition)
            sent.append(f"{codec}-{n}")
        producer.flush()
    assert [{codec for codec, _ in batches_on_wire(kafka_broker, topic.name, p)}
            for p in range(len(CODECS))] == [{codec} for codec in CODECS]
    worker = start_worker(**consumer_settings(topic))

    wait_until(lambda: sorted(stored_events(make)) == sorted(sent))
    assert worker.consumer.progress.rejected == 0
    assert not worker.consumer.stalled


def test_very_large_batches(library, make, producers, topic, kafka_broker, start_worker):
    producer = producers(library, codec="zstd", large_batches=True)
    big = "x" * 900_000  # nearly WEBHOOKS_MAX_PAYLOAD: one record fills a partition fetch
    names = []
    for n in range(6000):
        payload = {"name": f"m-{n}", "pad": big if n % 2000 == 0 else f"{n:0>300}"}
        producer.send(topic.name, {"type": "t", "payload": payload}, partition=n % 2)
        names.append(f"m-{n}")
    producer.flush()
    assert batches_on_wire(kafka_broker, topic.name, 1) == [("zstd", 3000)]  # one batch
    worker = start_worker(**consumer_settings(topic))

    wait_until(lambda: make.count("SELECT count(*) FROM events") == 6000)
    stored = [event["payload"]["name"] for event in stored_events(make).values()]
    assert sorted(stored) == sorted(names)
    assert worker.consumer.progress.rejected == 0

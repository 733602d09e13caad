"""The consumer-lag gauge: per partition, the broker's end minus what is stored and committed."""

from db.pool import ConnectionPool
from service.ingest.consumer import Consumer
from service.runtime.telemetry import Telemetry
from tests.helpers import wait_until
from tests.integration.test_telemetry import samples
from tests.kafka import consumer_settings, new_topic


def _lags(telemetry: Telemetry, topic: str) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value
            for (name, labels), value in samples(telemetry.prometheus_text().decode()).items()
            if name == "webhooks_kafka_consumer_lag" and dict(labels)["topic"] == topic}


def test_lag_counts_what_is_not_yet_stored_and_falls_to_zero(kafka_broker, settings,
                                                             database_url):
    topic = new_topic(kafka_broker, partitions=1)
    topic.send_many([{"type": "t", "n": n} for n in range(20)])
    telemetry = Telemetry()
    pool = ConnectionPool(database_url, size=2)
    consumer = Consumer(pool, settings.replace(**consumer_settings(topic), kafka_batch_size=5),
                        telemetry=telemetry)
    try:
        # One step at a time (the consumer's loop is not started): the first batch stored
        # leaves the rest of the partition as lag.
        wait_until(lambda: consumer._consume_once() and consumer.progress.messages)
        assert consumer.progress.messages == 5
        assert _lags(telemetry, topic.name) == {0: 15}
        # At least: a group rebalance on a starved machine reads a batch again.
        wait_until(lambda: consumer._consume_once() and consumer.progress.messages >= 20
                   and _lags(telemetry, topic.name) == {0: 0})
        topic.send_many([{"type": "t", "n": n} for n in range(20, 23)])
        wait_until(lambda: consumer._consume_once() and _lags(telemetry, topic.name) == {0: 0}
                   and consumer.progress.messages >= 23)
    finally:
        consumer.stop(timeout=5)
        pool.close()
        topic.close()
    assert _lags(telemetry, topic.name) == {}  # a stopped consumer reports no partition


def test_lag_is_reported_for_each_assigned_partition(kafka_broker, settings, database_url):
    topic = new_topic(kafka_broker, partitions=3)
    topic.send_many([{"type": "t", "n": n} for n in range(30)])
    telemetry = Telemetry()
    pool = ConnectionPool(database_url, size=2)
    consumer = Consumer(pool, settings.replace(**consumer_settings(topic)), telemetry=telemetry)
    try:
        wait_until(lambda: consumer._consume_once() and consumer.progress.messages >= 30
                   and set(_lags(telemetry, topic.name)) == {0, 1, 2})
        assert _lags(telemetry, topic.name) == {0: 0, 1: 0, 2: 0}
    finally:
        consumer.stop(timeout=5)
        pool.close()
        topic.close()

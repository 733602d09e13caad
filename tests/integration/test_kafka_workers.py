"""Kafka ingestion across workers: stopped mid-stream and restarted, or sharing one group."""

import signal

import gevent
import pytest

from tests.helpers import PATIENCE, wait_until, worker_process
from tests.kafka import SESSION_TIMEOUT, consumer_settings

MESSAGES = 1500


def _produce_slowly(topic, first, last, chunk=100, pause=0.05):
    """Produce messages numbered `first` to `last` - 1 in chunks, pausing between them."""
    for start in range(first, last, chunk):
        topic.send_many([{"type": "t", "n": n} for n in range(start, min(last, start + chunk))])
        gevent.sleep(pause)


def _assert_every_message_ingested_once(make, topic, fan_out):
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id FROM events")
        ids = [row[0] for row in cursor.fetchall()]
    assert len(topic.sent) == MESSAGES
    assert sorted(ids) == sorted(f"{topic.name}:{p}:{o}" for p, o in topic.sent)
    assert make.count("SELECT count(*) FROM deliveries") == MESSAGES * fan_out
    assert make.count("SELECT count(DISTINCT (event_id, config_id)) FROM deliveries") \
        == MESSAGES * fan_out


@pytest.mark.slow  # a long proof (20-45 s): run by CI after the default tier
def test_a_worker_stopped_mid_stream_and_restarted_ingests_every_message_once(
        make, receiver, topic, database_url):
    make.config(endpoint=receiver.url, event_types=["t"])
    make.config(endpoint=receiver.url, event_types=["t"])
    kafka = consumer_settings(topic)
    env = {"KAFKA_BOOTSTRAP_SERVERS": kafka["kafka_bootstrap_servers"],
           "KAFKA_TOPICS": topic.name, "KAFKA_GROUP_ID": kafka["kafka_group_id"],
           "WEBHOOKS_KAFKA_SESSION_TIMEOUT": f"{SESSION_TIMEOUT}s",
           "WEBHOOKS_KAFKA_BATCH_SIZE": "50"}
    first = worker_process(database_url, **env)
    second = None
    try:
        # The rest is produced only once the first worker is stopped: it stops mid-stream
        # however fast or slowly it ingests.
        _produce_slowly(topic, 0, MESSAGES // 2)
        wait_until(lambda: make.count("SELECT count(*) FROM events") >= 300)
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=PATIENCE)
        assert first.returncode == 0, err.decode()[-2000:]
        stopped_at = make.count("SELECT count(*) FROM events")
        # A warm stop commits what it stored: the restart re-reads nothing.
        assert sum(topic.committed(kafka["kafka_group_id"]).values()) == stopped_at

        second = worker_process(database_url, **env)
        _produce_slowly(topic, MESSAGES // 2, MESSAGES)
        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
        _assert_every_message_ingested_once(make, topic, fan_out=2)
    finally:
        for process in (first, second):
            if process and process.poll() is None:
                process.kill()
                process.communicate(timeout=PATIENCE)


def test_two_workers_share_the_partitions_and_a_rebalance_loses_nothing(
        make, receiver, topic, start_worker):
    make.config(endpoint=receiver.url, event_types=["t"])
    kafka = consumer_settings(topic)
    leaving = start_worker(**kafka, kafka_batch_size=20)
    staying = start_worker(**kafka, kafka_batch_size=20)

    def shares():
        clients = [worker.consumer.client for worker in (leaving, staying)]
        return all(clients) and sorted(len(c.assignment()) for c in clients) == [2, 2]

    wait_until(shares)
    _produce_slowly(topic, 0, MESSAGES // 2)
    wait_until(lambda: min(leaving.consumer.progress.events,
                           staying.consumer.progress.events) >= 100)
    leaving.stop()  # mid-stream: its partitions move to the other worker
    _produce_slowly(topic, MESSAGES // 2, MESSAGES)

    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
    wait_until(lambda: len(staying.consumer.client.assignment()) == 4)
    _assert_every_message_ingested_once(make, topic, fan_out=1)
    assert leaving.consumer.progress.events + staying.consumer.progress.events == MESSAGES

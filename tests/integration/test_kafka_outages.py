"""Kafka ingestion through outages: the database down, the broker frozen or not yet up."""

import contextlib
import shutil

import gevent
import pytest

from db import configs
from db.migrate import migrate
from db.pool import ConnectionPool
from service import local_postgres
from service.local_kafka import LocalKafka
from service.local_postgres import free_port
from service.settings import Settings
from service.telemetry import Telemetry
from service.worker import Worker
from tests.helpers import wait_until
from tests.kafka import SESSION_TIMEOUT, Topic, consumer_settings, new_topic, unique


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test alone, free to be killed and started again.

    Durable (no fsync=off, no synchronous_commit=off): a crash must keep what was committed,
    or offsets would be committed for events the crash then took away.
    """
    server = local_postgres.temporary(fast_unsafe=False)
    migrate(server.start())
    yield server
    server.stop("immediate")
    shutil.rmtree(server.base, ignore_errors=True)


def _ids(make):
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id FROM events")
        return {row[0] for row in cursor.fetchall()}


def _derived(topic: Topic) -> set[str]:
    return {f"{topic.name}:{partition}:{offset}" for partition, offset in topic.sent}


def test_a_database_outage_commits_nothing_and_loses_nothing(own_postgres, topic, receiver):
    with contextlib.closing(ConnectionPool(own_postgres.dsn, size=1)) as pool:
        configs.create(pool, endpoint=receiver.url, event_types=["t"])
    kafka = consumer_settings(topic)
    settings = Settings.load({}, {"database_url": own_postgres.dsn, "metrics_port": "0",
                                  "allow_private_endpoints": "true", "retry_period": "1s",
                                  "http_timeout": "5s"}).replace(**kafka)
    worker = Worker(settings, telemetry=Telemetry())
    worker.start()
    try:
        topic.send_many([{"type": "t", "n": n} for n in range(50)])
        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(), timeout=15)
        own_postgres.kill()
        before = topic.committed(kafka["kafka_group_id"])
        topic.send_many([{"type": "t", "n": n} for n in range(50, 100)])
        gevent.sleep(2.5)  # the consumer reads the batch, cannot store it, tries again
        assert topic.committed(kafka["kafka_group_id"]) == before
        own_postgres.start()  # same data, same port

        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(), timeout=20)
        with contextlib.closing(ConnectionPool(own_postgres.dsn, size=1)) as pool, \
                pool.transaction() as cursor:
            cursor.execute("SELECT id FROM events")
            assert {row[0] for row in cursor.fetchall()} == _derived(topic)
            cursor.execute("SELECT count(*) FROM deliveries")
            assert cursor.fetchone()[0] == 100
        receiver.wait_for(100, timeout=20)
    finally:
        worker.stop()


def test_a_broker_frozen_past_the_session_timeout_loses_and_doubles_nothing(
        make, receiver, own_broker, start_worker):
    topic = new_topic(own_broker)
    make.config(endpoint=receiver.url, event_types=["t"])
    kafka = consumer_settings(topic)
    start_worker(**kafka)
    try:
        topic.send_many([{"type": "t", "n": n} for n in range(30)])
        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(), timeout=15)
        own_broker.pause()
        producing = gevent.spawn(topic.send_many, [{"type": "t", "n": n} for n in range(30, 60)])
        gevent.sleep(SESSION_TIMEOUT + 1.5)
        own_broker.resume()
        producing.get(timeout=20)

        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(), timeout=30)
        assert _ids(make) == _derived(topic)
        assert make.count("SELECT count(*) FROM deliveries") == 60
        receiver.wait_for(60, timeout=20)
    finally:
        own_broker.resume()
        topic.close()


def test_a_worker_started_before_its_broker_consumes_once_the_broker_is_up(make, start_worker):
    broker = LocalKafka(port=free_port())
    name = unique("late")
    worker = start_worker(kafka_bootstrap_servers=broker.bootstrap, kafka_topics=(name,),
                          kafka_group_id=unique("group"), kafka_session_timeout=SESSION_TIMEOUT)
    try:
        gevent.sleep(1)  # the consumer keeps trying an address nobody listens on
        assert worker.consumer.client is None
        broker.start()
        broker.create_topic(name)
        topic = Topic(broker, name)
        topic.send_many([{"type": "t", "n": n} for n in range(10)])
        wait_until(lambda: _ids(make) == _derived(topic), timeout=20)
        topic.close()
    finally:
        broker.stop()

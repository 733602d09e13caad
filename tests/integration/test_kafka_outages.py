"""Kafka ingestion through outages: the database down, the broker frozen or not yet up."""

import contextlib
import logging

import gevent

from db import configs
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from service.local.kafka import LocalKafka
from service.local.ports import reserve_port
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.worker import Worker
from tests.helpers import PATIENCE, wait_until
from tests.kafka import (
    SESSION_TIMEOUT,
    Topic,
    consumer_settings,
    new_topic,
    unique,
)
from tests.outages import broker_frozen, postgres_down
from tests.relay import relaying


def _ids(make):
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id FROM events")
        return {row[0] for row in cursor.fetchall()}


def _derived(topic: Topic) -> set[str]:
    return {f"{topic.name}:{partition}:{offset}" for partition, offset in topic.sent}


def _failed_stores(caplog) -> list:
    return [r for r in caplog.records if r.getMessage().startswith("storing a batch failed")]


def test_a_database_outage_commits_nothing_and_loses_nothing(own_postgres, topic, receiver,
                                                              caplog):
    caplog.set_level(logging.WARNING, logger="webhooks.consumer")
    with contextlib.closing(ConnectionPool(own_postgres.dsn, size=1)) as pool:
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=receiver.url, event_types=["t"])
    kafka = consumer_settings(topic)
    # A claim whose commit the kill cut off may have committed unknown to the worker: the
    # stale-claim recovery returns it, so the test shortens the claim timeout to see it do so.
    settings = Settings.load({}, {"database_url": own_postgres.dsn, "metrics_port": "0",
                                  "allow_private_endpoints": "true", "retry_period": "1s",
                                  "http_timeout": "2s", "claim_timeout": "10s",
                                  "recovery_period": "1s"}).replace(**kafka)
    worker = Worker(settings, telemetry=Telemetry())
    worker.start()
    try:
        topic.send_many([{"type": "t", "n": n} for n in range(50)])
        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
        with postgres_down(own_postgres):  # back with the same data on the same port
            before = topic.committed(kafka["kafka_group_id"])
            topic.send_many([{"type": "t", "n": n} for n in range(50, 100)])
            # the consumer reads the batch, cannot store it, and reads it again
            wait_until(lambda: len(_failed_stores(caplog)) >= 2)
            assert topic.committed(kafka["kafka_group_id"]) == before

        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
        with contextlib.closing(ConnectionPool(own_postgres.dsn, size=1)) as pool, \
                pool.transaction() as cursor:
            cursor.execute("SELECT id FROM events")
            assert {row[0] for row in cursor.fetchall()} == _derived(topic)
            cursor.execute("SELECT count(*) FROM deliveries")
            assert cursor.fetchone()[0] == 100
        receiver.wait_for(100)
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
        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
        with broker_frozen(own_broker):
            producing = gevent.spawn(topic.send_many,
                                     [{"type": "t", "n": n} for n in range(30, 60)])
            gevent.sleep(SESSION_TIMEOUT + 1.5)
        producing.get(timeout=PATIENCE)

        wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends())
        assert _ids(make) == _derived(topic)
        assert make.count("SELECT count(*) FROM deliveries") == 60
        receiver.wait_for(60)
    finally:
        topic.close()


def test_a_worker_started_before_its_broker_consumes_once_the_broker_is_up(
        make, start_worker, caplog):
    """The worker knows the broker by an address nobody listens on until the broker is up
    and its topic made (a relay to the broker then); the worker's own requests cannot bring
    the topic into being first."""
    caplog.set_level(logging.WARNING, logger="webhooks.consumer")
    address = reserve_port()
    name = unique("late")
    worker = start_worker(kafka_bootstrap_servers=f"127.0.0.1:{address}", kafka_topics=(name,),
                          kafka_group_id=unique("group"), kafka_session_timeout=SESSION_TIMEOUT)
    wait_until(lambda: len([r for r in caplog.records
                            if r.getMessage().startswith("Kafka brokers unreachable")]) >= 2)
    assert worker.consumer.client is None
    with LocalKafka(port=reserve_port()) as broker:
        broker.create_topic(name)
        with relaying(address, broker.port):
            topic = Topic(broker, name)
            try:
                topic.send_many([{"type": "t", "n": n} for n in range(10)])
                wait_until(lambda: _ids(make) == _derived(topic))
            finally:
                topic.close()

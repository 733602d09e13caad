"""Kafka messages of a tenant over its eventsPerSecond wait, with a real broker: the consumer
stores what the rate allows, commits each partition up to its first waiting message, holds
that partition, and stores the rest once the rate allows; nothing is dropped or rejected,
and the other partitions (and the other tenants' messages) go on meanwhile."""

from __future__ import annotations

import itertools

from db import configs, tenants
from db.scope import DEFAULT_TENANT_ID
from db.tenants import CLEAR
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings

SLOW = 0.01  # events a second: one, then one per 100 s (longer than any test here)


def subscribe(make, tenant_id: int) -> str:
    return configs.create(make.pool, tenant_id, endpoint="http://127.0.0.1:9/hook",
                          event_types=["order.paid"])[0].id


def stored(make) -> list[str]:
    return sorted(make.column("SELECT id FROM events"))


def order(id: str, tenant: str | None = None) -> dict:
    message = {"type": "order.paid", "id": id, "payload": {}}
    return message if tenant is None else {**message, "tenant": tenant}


def test_a_message_over_its_rate_holds_its_partition_until_the_rate_allows_it(
        make, topic, start_worker):
    slow = tenants.create(make.pool, uid="slow", events_per_second=SLOW)
    subscribe(make, slow.id)
    subscribe(make, DEFAULT_TENANT_ID)
    topic.send(order("slow-1", "slow"), partition=0)
    _, waits_at = topic.send(order("slow-2", "slow"), partition=0)
    topic.send(order("default-1"), partition=0)
    topic.send(order("default-2"), partition=1)
    kafka = consumer_settings(topic)
    start_worker(**kafka)

    # The rate allows one event of `slow` now: the second waits, holding its partition at its
    # offset; the message behind it (another tenant's) and the other partition are stored.
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == {0: waits_at, 1: 1},
               timeout=PATIENCE)
    assert stored(make) == ["default-1", "default-2", "slow-1"]
    assert make.count("SELECT count(*) FROM rejected_events") == 0

    # Once the rate allows it (here: the limit is lifted), the held message is stored.
    tenants.update(make.pool, "slow", events_per_second=CLEAR)
    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(),
               timeout=PATIENCE)
    assert stored(make) == ["default-1", "default-2", "slow-1", "slow-2"]
    assert make.count("SELECT count(*) FROM deliveries") == 4  # each event once
    assert make.count("SELECT count(*) FROM rejected_events") == 0


def test_a_tenants_messages_are_stored_at_its_rate_and_none_is_lost(make, topic, start_worker):
    rate, burst, spacing = 4.0, 4, 250_000  # a burst of four, then one every 250,000 µs
    busy = tenants.create(make.pool, uid="busy", events_per_second=rate)
    subscribe(make, busy.id)
    subscribe(make, DEFAULT_TENANT_ID)
    for n in range(12):
        topic.send(order(f"busy-{n}", "busy"), partition=n % 2)
        topic.send(order(f"default-{n}"), partition=n % 4)
    kafka = consumer_settings(topic)
    start_worker(**kafka)

    wait_until(lambda: topic.committed(kafka["kafka_group_id"]) == topic.ends(),
               timeout=PATIENCE)
    assert len(stored(make)) == 24
    assert make.count("SELECT count(*) FROM deliveries") == 24
    assert make.count("SELECT count(*) FROM rejected_events") == 0
    # Stored at most a burst and the rate's share of any span of time (as the database's
    # clock has it: the events' creation time is the time their slots were taken at).
    times = make.column("SELECT (extract(epoch FROM created_at) * 1e6)::bigint FROM events "
                        "WHERE tenant_id = %s ORDER BY created_at", (busy.id,))
    for i, j in itertools.combinations(range(len(times)), 2):
        assert j - i + 1 <= burst + (times[j] - times[i]) // spacing, (i, j, times)

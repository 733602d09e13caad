"""Tenants from Kafka, with a real broker and librdkafka (confluent-kafka) as the producer:
the envelope's `tenant` field or a `webhook-tenant` header routes an event to that tenant's
configs only; a message for a tenant that does not exist is a rejected event (never dropped,
never retried for ever) that is ingested as it was sent once the tenant exists."""

from __future__ import annotations

import pytest

from db import configs, tenants, tokens
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.api.conftest import Api
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings


def config_of(make, tenant_id: int, event_type: str) -> str:
    return configs.create(make.pool, tenant_id, endpoint="http://127.0.0.1:9/hook",
                          event_types=[event_type])[0].id


def deliveries_of(make, config_id: str) -> list[str]:
    return sorted(make.column("SELECT event_id FROM deliveries WHERE config_id = %s",
                              (config_id,)))


@pytest.mark.parametrize("library", ["confluent-kafka", "kafka-python"])
def test_messages_reach_the_tenant_they_name_and_unknown_ones_wait_to_be_replayed(
        make, producers, topic, start_worker, library):
    acme = tenants.create(make.pool, uid="acme")
    to_acme = config_of(make, acme.id, "order.paid")
    to_default = config_of(make, DEFAULT_TENANT_ID, "order.paid")
    producer = producers(library)
    producer.send(topic.name, {"type": "order.paid", "id": "by-field", "tenant": "acme",
                               "payload": {}})
    producer.send(topic.name, {"type": "order.paid", "id": "by-header", "payload": {}},
                  headers=[("webhook-tenant", b"acme")])
    producer.send(topic.name, {"type": "order.paid", "id": "nameless", "payload": {}})
    producer.send(topic.name, {"type": "order.paid", "id": "for-ghost", "tenant": "ghost",
                               "payload": {}}, key=b"k-1")
    producer.send(topic.name, {"type": "order.paid", "id": "by-header-ghost", "payload": {}},
                  headers=[("webhook-tenant", b"ghost")])
    producer.send(topic.name, {"type": "order.paid", "id": "torn", "tenant": "acme",
                               "payload": {}}, headers=[("webhook-tenant", b"other")])
    producer.flush()
    start_worker(**consumer_settings(topic))
    wait_until(lambda: len(deliveries_of(make, to_acme)) == 2
               and make.count("SELECT count(*) FROM rejected_events") == 3,
               timeout=PATIENCE)

    assert deliveries_of(make, to_acme) == ["by-field", "by-header"]
    assert deliveries_of(make, to_default) == ["nameless"]
    assert sorted(make.rows("SELECT reason, tenant_uid FROM rejected_events")) == [
        ('invalid_tenant: the message names more than one tenant: "acme", "other"', None),
        ('unknown_tenant: unknown tenant "ghost"', "ghost"),
        ('unknown_tenant: unknown tenant "ghost"', "ghost")]

    ghost = tenants.create(make.pool, uid="ghost")
    to_ghost = config_of(make, ghost.id, "order.paid")
    settings = Settings.load({}, {"database_url": make.pool.dsn})
    client = create_app(settings, pool=make.pool, telemetry=Telemetry(role="web")).test_client()
    api = Api(client, tokens.create(make.pool, name="ops", role="operator", tenant_id=None)[1])
    done = api.data('mutation { replayRejectedEvents(tenant: "ghost") { replayed { eventId '
                    'tenant } stillRejected { reason } } }')["replayRejectedEvents"]
    assert sorted(r["eventId"] for r in done["replayed"]) == ["by-header-ghost", "for-ghost"]
    assert {r["tenant"] for r in done["replayed"]} == {"ghost"} and not done["stillRejected"]
    assert deliveries_of(make, to_ghost) == ["by-header-ghost", "for-ghost"]
    assert [bytes(key) for key in make.column(
        "SELECT message_key FROM events WHERE id = 'for-ghost'")] == [b"k-1"]
    assert make.count("SELECT count(*) FROM rejected_events WHERE replayed_at IS NOT NULL") == 2
    again = api.data('mutation { replayRejectedEvents(tenant: "ghost") { replayed { eventId } '
                     '} }')["replayRejectedEvents"]
    assert again["replayed"] == []  # each message is ingested once

    (torn,) = make.column("SELECT id FROM rejected_events WHERE tenant_uid IS NULL")
    still = api.data(f'mutation {{ replayRejectedEvent(id: "{torn}") {{ replayed {{ eventId }} '
                     'stillRejected { reason } } }')["replayRejectedEvent"]
    assert still["replayed"] == [] and "more than one tenant" in still["stillRejected"][0][
        "reason"]
    assert api.code('mutation { replayRejectedEvent(id: "424242") { replayed { eventId } } }') \
        == "NOT_FOUND"


def test_with_create_tenants_on_publish_an_unknown_tenant_is_created(
        make, producers, topic, start_worker):
    producer = producers("confluent-kafka")
    producer.send(topic.name, {"type": "order.paid", "id": "first", "tenant": "newcomer",
                               "payload": {}})
    producer.flush()
    start_worker(create_tenants_on_publish=True, **consumer_settings(topic))
    wait_until(lambda: make.count("SELECT count(*) FROM events WHERE id = 'first'"),
               timeout=PATIENCE)
    created = tenants.get(make.pool, PLATFORM, "newcomer")
    assert created is not None and created.name == "newcomer"
    assert make.count("SELECT count(*) FROM rejected_events") == 0

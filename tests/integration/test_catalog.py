"""The catalog on the real database and the real consumer: the fan-out's patterns agree with
the rule in Python, a deprecated type's requests say so, and a Kafka message whose payload
fails its type's schema is a rejected event, ingested once the schema is fixed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from db import catalog, tokens
from db.catalog import subscription_patterns
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.api.conftest import Api
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings
from tests.receivers import Receiver

SEGMENT = st.text(alphabet="abcz09_-:", min_size=1, max_size=6)


def test_the_fan_outs_patterns_are_the_rule_of_python(make):
    with make.pool.connection() as conn, conn.cursor() as cursor:

        @settings(max_examples=200, deadline=None)
        @given(st.lists(SEGMENT, min_size=1, max_size=6))
        def agree(segments):
            name = ".".join(segments)
            cursor.execute("SELECT subscription_patterns(%s)", (name,))
            assert sorted(cursor.fetchone()[0]) == sorted(subscription_patterns(name))

        agree()
        conn.rollback()


def test_a_deprecated_types_requests_say_so(make, start_worker):
    catalog.create(make.pool, name="legacy.event")
    catalog.deprecate(make.pool, "legacy.event", reason="use modern.event")
    receiver = Receiver()
    try:
        make.config(endpoint=receiver.url, event_types=["legacy.event", "modern.event"])
        make.event(type="legacy.event")
        make.event(type="modern.event")
        start_worker()
        requests = receiver.wait_for(2)
    finally:
        receiver.stop()
    marked = {json.loads(request.body)["type"]: request.headers.get("webhook-deprecated")
              for request in requests}
    assert marked == {"legacy.event": "true", "modern.event": None}


def test_a_kafka_message_failing_its_schema_is_rejected_then_replayed_once_fixed(
        make, producers, topic, start_worker):
    catalog.create(make.pool, name="order.placed",
                   schema={"type": "object", "required": ["order"]})
    make.config(event_types=["order.placed"])
    producer = producers("confluent-kafka")
    producer.send(topic.name, {"type": "order.placed", "id": "fits", "payload": {"order": 1}})
    producer.send(topic.name, {"type": "order.placed", "id": "misfit", "payload": {"id": 1}})
    producer.flush()
    start_worker(**consumer_settings(topic))
    wait_until(lambda: make.count("SELECT count(*) FROM events") == 1
               and make.count("SELECT count(*) FROM rejected_events") == 1, timeout=PATIENCE)
    (reason,) = make.column("SELECT reason FROM rejected_events")
    assert reason.startswith("schema_mismatch: ") and "'order' is a required" in reason
    assert make.column("SELECT schema_version FROM events") == [1]

    catalog.update(make.pool, "order.placed", schema={"type": "object"}, set_schema=True)
    settings_ = Settings.load({}, {"database_url": make.pool.dsn})
    app = create_app(settings_, pool=make.pool, telemetry=Telemetry(role="web"))
    api = Api(app.test_client(), tokens.create(make.pool, name="ops", role="operator",
                                               tenant_id=None)[1])
    (rejected_id,) = make.column("SELECT id FROM rejected_events")
    done = api.data(f'mutation {{ replayRejectedEvent(id: "{rejected_id}") {{ replayed '
                    '{ eventId } stillRejected { reason } } }')["replayRejectedEvent"]
    assert done == {"replayed": [{"eventId": "misfit"}], "stillRejected": []}
    assert make.column("SELECT schema_version FROM events WHERE id = 'misfit'") == [2]

"""Config filters on the real database and the real consumer: an event a config's filter
rejects makes no delivery for it (and is counted once for it), in the one ingest transaction,
from the API and from Kafka alike; a filter change is not a change of how a config sends."""

from __future__ import annotations

import threading

from db import config_filters, configs, events, tenants
from db.scope import PLATFORM, Scope
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings

BIG = {"amount": {"$gte": 100}}


def _deliveries_of(make, config_id: str) -> list[str]:
    return make.column("SELECT event_id FROM deliveries WHERE config_id = %s ORDER BY id",
                       (config_id,))


def _stats(make, config_id: str, scope: Scope = PLATFORM) -> config_filters.FilterCount:
    return config_filters.counts(make.pool, scope, [config_id])[config_id]


def test_an_event_the_filter_rejects_makes_no_delivery_and_is_counted_once(make):
    big_only = make.config(filter=BIG)
    everything = make.config()
    make.event(id="small", payload={"amount": 5})
    make.event(id="large", payload={"amount": 500})
    make.event(id="none", payload={"currency": "EUR"})
    make.event(id="small", payload={"amount": 5})  # the same event again: nothing new
    assert _deliveries_of(make, big_only.id) == ["large"]
    assert _deliveries_of(make, everything.id) == ["small", "large", "none"]
    stats = _stats(make, big_only.id)
    assert stats.filtered_out == 2 and stats.last_filtered_out_at is not None
    assert _stats(make, everything.id) == config_filters.FilterCount(0, None)


def test_filters_apply_to_pattern_subscriptions_and_one_batch_of_many_events(make):
    fr = make.config(event_types=["invoice.*"], filter={"customer.country": "FR"})
    not_paid = make.config(event_types=["*"], filter={"status": {"$ne": "paid"}})
    batch = [events.new_event(f"e{n}", type, payload, tenant_id=fr.tenant_id,
                              max_payload=10_000)
             for n, (type, payload) in enumerate([
                 ("invoice.created", {"customer": {"country": "FR"}, "status": "open"}),
                 ("invoice.paid", {"customer": {"country": "DE"}, "status": "paid"}),
                 ("order.created", {"customer": {"country": "FR"}}),
                 ("invoice.paid", {"customer": [{"country": "US"}, {"country": "FR"}],
                                   "status": "paid"})])]
    published = events.publish_all(make.pool, batch)
    assert _deliveries_of(make, fr.id) == ["e0", "e3"]
    assert _deliveries_of(make, not_paid.id) == ["e0", "e2"]
    assert [p.filtered_out for p in published] == [0, 2, 0, 1]
    assert _stats(make, fr.id).filtered_out == 1  # order.created is not among its types
    assert _stats(make, not_paid.id).filtered_out == 2


def test_a_filter_is_the_tenants_own(make):
    other = tenants.create(make.pool, uid="other").id
    filtered = make.config(filter=BIG)
    theirs = make.config(tenant_id=other, filter={"amount": {"$lt": 100}})
    make.event(payload={"amount": 5})
    make.event(payload={"amount": 5}, tenant_id=other)
    assert len(_deliveries_of(make, filtered.id)) == 0
    assert len(_deliveries_of(make, theirs.id)) == 1
    assert _stats(make, filtered.id).filtered_out == 1
    assert _stats(make, theirs.id).filtered_out == 0
    assert _stats(make, filtered.id, Scope(other)).filtered_out == 0  # not theirs to read


def test_changing_a_filter_applies_to_later_events_and_is_not_a_change_of_sending(make):
    config = make.config(filter=BIG)
    make.event(id="large", payload={"amount": 500})
    version = make.count("SELECT version FROM config_health WHERE config_id = %s",
                         (config.id,))
    changed = configs.update(make.pool, PLATFORM, config.id, filter={"amount": {"$lt": 100}},
                             set_filter=True)
    assert changed.filter == {"amount": {"$lt": 100}}
    make.event(id="small", payload={"amount": 5})
    make.event(id="larger", payload={"amount": 900})
    # The delivery made before stays; the new filter decides the events after it.
    assert _deliveries_of(make, config.id) == ["large", "small"]
    assert make.count("SELECT version FROM config_health WHERE config_id = %s",
                      (config.id,)) == version
    configs.update(make.pool, PLATFORM, config.id, name="kept", set_name=True)
    assert configs.get(make.pool, PLATFORM, config.id).filter == {"amount": {"$lt": 100}}
    cleared = configs.update(make.pool, PLATFORM, config.id, filter=None, set_filter=True)
    assert cleared.filter is None
    make.event(id="any", payload={"amount": 900})
    assert _deliveries_of(make, config.id)[-1] == "any"


def test_a_stored_filter_the_language_cannot_read_lets_every_event_through(make):
    config = make.config(filter=BIG)
    with make.pool.transaction() as cursor:  # as a filter of a later, looser language would be
        cursor.execute("""UPDATE configs SET filter = '{"amount": {"$near": 1}}'
                          WHERE id = %s""", (config.id,))
    make.event(id="kept", payload={"amount": 1})
    assert _deliveries_of(make, config.id) == ["kept"]


def test_concurrent_ingests_of_one_filtered_config_count_every_rejection(make):
    config = make.config(filter=BIG)
    errors: list[BaseException] = []

    def publish(worker: int) -> None:
        try:
            for n in range(20):
                batch = [events.new_event(f"w{worker}-{n}-{k}", "order.created",
                                          {"amount": k}, tenant_id=config.tenant_id,
                                          max_payload=1000) for k in (1, 2, 300)]
                events.publish_all(make.pool, batch)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=publish, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert _stats(make, config.id).filtered_out == 4 * 20 * 2
    assert len(_deliveries_of(make, config.id)) == 4 * 20


def test_a_kafka_message_the_filter_rejects_makes_no_delivery(make, producers, topic,
                                                               start_worker):
    config = make.config(event_types=["order.placed"], filter={"order.total": {"$gt": 10}})
    producer = producers("confluent-kafka")
    for id, total in (("cheap", 3), ("dear", 30)):
        producer.send(topic.name, {"type": "order.placed", "id": id,
                                   "payload": {"order": {"total": total}}})
    producer.flush()
    start_worker(**consumer_settings(topic))
    wait_until(lambda: make.count("SELECT count(*) FROM events") == 2, timeout=PATIENCE)
    assert _deliveries_of(make, config.id) == ["dear"]
    assert _stats(make, config.id).filtered_out == 1

"""Message keys that cannot be ordering keys as they are — a schema registry's framed key
(starting with NUL bytes), bytes that are not UTF-8, a key over 255 characters — sent by
librdkafka (confluent-kafka): no message is rejected, the raw key is kept on the event, an
unordered config gets every event, and an ordered config delivers each key in offset order
under its encoded ordering key."""

from __future__ import annotations

from db.event_keys import ordering_key
from db.vocabulary import Ordering
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings
from tests.kafka_events import stored_events
from tests.ordered_endpoint import Script
from tests.receivers import Receiver

KEYS = {
    b"\x00\x00\x00\x00\x01\x0ecustomer-42": "~b64:AAAAAAEOY3VzdG9tZXItNDI=",  # schema registry
    b"\x00\x00\x00\x00\x01\x0ecustomer-43": "~b64:AAAAAAEOY3VzdG9tZXItNDM=",
    b"\xff\xfe not UTF-8": "~b64://4gbm90IFVURi04",
    b"k" * 300: ordering_key(b"k" * 300),  # ~sha256: and the hex digest of its bytes
    b"plain-key": "plain-key",
}
PER_KEY = 5


def test_events_of_unusable_keys_reach_every_config_and_keep_their_order(
        make, producers, topic, start_worker):
    keys = list(KEYS)
    key_of = {n: keys[n % len(keys)] for n in range(PER_KEY * len(keys))}
    ordered_script = Script(fail_first={0, 2, 6, 13, 19})  # retries that later events wait out
    unordered_script = Script(fail_first=set())
    ordered, unordered = Receiver(ordered_script), Receiver(unordered_script)
    try:
        make.config(endpoint=ordered.url, event_types=["keyed"], ordering=Ordering.PER_KEY)
        make.config(endpoint=unordered.url, event_types=["keyed"])
        producer = producers("confluent-kafka")
        for n, key in key_of.items():  # a key's messages share a partition, in this order
            producer.send(topic.name, {"type": "keyed", "id": f"keyed-{n}", "payload": {"n": n}},
                          key=key)
        producer.flush()
        start_worker(min_backoff=0.1, max_backoff=0.3, **consumer_settings(topic))
        wait_until(lambda: len(ordered_script.succeeded) == len(key_of)
                   and len(unordered_script.succeeded) == len(key_of), timeout=2 * PATIENCE)
    finally:
        ordered.stop()
        unordered.stop()

    assert make.count("SELECT count(*) FROM rejected_events") == 0
    stored = stored_events(make)
    assert {id: event["key"] for id, event in stored.items()} == {
        f"keyed-{n}": key for n, key in key_of.items()}
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT DISTINCT e.message_key, d.ordering_key FROM deliveries d "
                       "JOIN events e ON e.id = d.event_id")
        assert {bytes(key): made for key, made in cursor.fetchall()} == KEYS
    assert sorted(n for _, n, _ in unordered_script.succeeded) == sorted(key_of)
    assert {key for key, _, _ in unordered_script.succeeded} == {None}  # no order, no header
    for key, made in KEYS.items():
        got = [(n, sequence) for header, n, sequence in ordered_script.succeeded
               if header == made]
        assert [n for n, _ in got] == [n for n in sorted(key_of) if key_of[n] == key], made
        assert [sequence for _, sequence in got] == [str(i) for i in range(1, PER_KEY + 1)]
    assert ordered_script.most_at_once == 1

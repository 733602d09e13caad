"""The proof of ordered delivery, at full size: 10,000 events over 200 keys to an ordered
config whose endpoint answers 5xx to a random fifth of first attempts and hangs past the HTTP
timeout now and then, two worker processes, one of them SIGKILLed mid-run and another
started: for every key, the endpoint's first successful receipts are in publish order with
none missing; an unordered config on the same events gets every one of them too. And the same
with keyed messages of another Kafka client over several partitions."""

from __future__ import annotations

import collections
import json
import random
import signal

import pytest

from db import events
from db.scope import DEFAULT_TENANT_ID
from db.vocabulary import Ordering
from tests.helpers import PATIENCE, wait_until, worker_process
from tests.kafka import consumer_settings
from tests.receivers import Receiver, Reply

pytestmark = pytest.mark.slow

EVENTS, KEYS = 10_000, 200
SETTINGS = {"WEBHOOKS_HTTP_TIMEOUT": "2s", "WEBHOOKS_CLAIM_TIMEOUT": "10s",
            "WEBHOOKS_RECOVERY_PERIOD": "1s", "WEBHOOKS_MIN_BACKOFF": "100ms",
            "WEBHOOKS_MAX_BACKOFF": "500ms", "WEBHOOKS_CIRCUIT_FAILURES": "0",
            "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true"}


class Flaky:
    """A fifth of first attempts answer 503, one in fifty hangs past the HTTP timeout, the
    rest 200; the first successful receipt of each event is kept, in arrival order."""

    def __init__(self) -> None:
        self.attempts: collections.Counter = collections.Counter()
        self.first_successes: list[tuple[str, int]] = []
        self.succeeded: set[int] = set()

    def __call__(self, request) -> Reply:
        n = json.loads(request.body)["data"]["n"]
        self.attempts[n] += 1
        luck = random.Random(n * 1000 + self.attempts[n]).random()
        if luck < 0.02:
            return Reply(200, delay=3.0)  # the worker gives up first: a timeout, retried
        if self.attempts[n] == 1 and luck < 0.22:
            return Reply(503)
        if n not in self.succeeded:
            self.succeeded.add(n)
            self.first_successes.append((request.headers.get("webhook-ordering-key"), n))
        return Reply(200)


def test_every_keys_first_successes_arrive_in_publish_order_through_faults_and_a_kill(
        make, database_url, processes):
    ordered_script, unordered_script = Flaky(), Flaky()
    ordered_receiver, unordered_receiver = Receiver(ordered_script), Receiver(unordered_script)
    try:
        ordered = make.config(endpoint=ordered_receiver.url, event_types=["ledger"],
                              ordering=Ordering.PER_KEY)
        make.config(endpoint=unordered_receiver.url, event_types=["ledger"])
        keys = {n: f"account-{n % KEYS}" for n in range(EVENTS)}
        batch = [events.new_event(f"ledger-{n}", "ledger", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                                  max_payload=1000,
                                  ordering_key=keys[n]) for n in range(EVENTS)]
        for start in range(0, EVENTS, 250):  # several transactions, as a consumer's batches
            with make.pool.transaction() as cursor:
                events.ingest(cursor, batch[start:start + 250], source="api")
        processes.extend(worker_process(database_url, **SETTINGS) for _ in range(2))
        wait_until(lambda: len(ordered_script.succeeded) >= EVENTS // 4, timeout=PATIENCE)
        processes[0].send_signal(signal.SIGKILL)  # mid-run, with requests in flight
        processes[0].wait(PATIENCE)
        processes.append(worker_process(database_url, **SETTINGS))
        wait_until(lambda: make.count(
            "SELECT count(*) FROM deliveries WHERE status = 'succeeded'") == 2 * EVENTS,
            timeout=5 * PATIENCE)
    finally:
        ordered_receiver.stop()
        unordered_receiver.stop()
    _assert_each_key_in_order(ordered_script, keys)
    assert unordered_script.succeeded == set(range(EVENTS))
    assert sum(ordered_script.attempts.values()) > EVENTS  # the faults happened
    assert make.count("SELECT count(*) FROM deliveries WHERE config_id = %s AND "
                      "sequence IS NULL", (ordered.id,)) == 0


def test_keyed_messages_of_another_client_over_four_partitions_arrive_in_offset_order(
        make, producers, topic, start_worker):
    """librdkafka (confluent-kafka) writes keyed messages; each key's partition holds them in
    the order sent: an ordered config delivers each key in that order through 5xx faults;
    the unordered config beside it gets all of them too."""
    script, unordered_script = Flaky(), Flaky()
    receiver, unordered_receiver = Receiver(script), Receiver(unordered_script)
    count, keys = 200, 20
    try:
        make.config(endpoint=receiver.url, event_types=["kafka.ledger"],
                    ordering=Ordering.PER_KEY)
        make.config(endpoint=unordered_receiver.url, event_types=["kafka.ledger"])
        producer = producers("confluent-kafka")
        for n in range(count):
            producer.send(topic.name, {"type": "kafka.ledger", "id": f"k-{n}",
                                       "payload": {"n": n}},
                          key=f"customer-{n % keys}".encode())
        producer.flush()
        start_worker(min_backoff=0.1, max_backoff=0.5, http_timeout=2.0, claim_timeout=10.0,
                     **consumer_settings(topic))
        wait_until(lambda: make.count(
            "SELECT count(*) FROM deliveries WHERE status = 'succeeded'") == 2 * count,
            timeout=5 * PATIENCE)
    finally:
        receiver.stop()
        unordered_receiver.stop()
    _assert_each_key_in_order(script, {n: f"customer-{n % keys}" for n in range(count)})
    assert unordered_script.succeeded == set(range(count))


def _assert_each_key_in_order(script: Flaky, keys: dict[int, str]) -> None:
    """Every key of `keys` (event number: key) got its events' first successes, all of them,
    in publish order."""
    by_key = collections.defaultdict(list)
    for key, n in script.first_successes:
        by_key[key].append(n)
    assert set(by_key) == set(keys.values())
    for key, received in by_key.items():
        assert received == [n for n in sorted(keys) if keys[n] == key], key

"""Ordered delivery per key, through a real worker and a real endpoint: the deliveries of one
key reach the endpoint one at a time and in the order their events were ingested, through
retries, a failure that holds the key until its replay succeeds, and a switch back to
unordered; other keys and unordered configs are not held."""

from __future__ import annotations

import json
import re
from pathlib import Path

from db import configs, deliveries, events
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.vocabulary import Ordering
from tests.helpers import wait_until, worker_metric
from tests.ordered_endpoint import Script
from tests.receivers import Receiver, Reply

DELIVERY_DOCS = (Path(__file__).resolve().parents[2] / "docs" / "delivery.md").read_text()


def publish(make, type: str, n: int, key: str | None) -> None:
    event = events.new_event(f"{type}-{n}", type, {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1 << 20,
                             ordering_key=key)
    events.publish(make.pool, event)


def test_each_key_arrives_in_order_one_at_a_time_through_retries(make, start_worker):
    script = Script(fail_first={0, 4, 7, 12, 13, 21})
    receiver = Receiver(script)
    try:
        ordered = make.config(endpoint=receiver.url, event_types=["ledger"],
                              ordering=Ordering.PER_KEY)
        for n in range(30):
            publish(make, "ledger", n, key=f"account-{n % 3}")
        start_worker(min_backoff=0.2, max_backoff=0.5)
        wait_until(lambda: len(script.succeeded) == 30, timeout=120)
    finally:
        receiver.stop()
    for key in ("account-0", "account-1", "account-2"):
        got = [(n, sequence) for k, n, sequence in script.succeeded if k == key]
        assert [n for n, _ in got] == [n for n in range(30) if f"account-{n % 3}" == key]
        assert [sequence for _, sequence in got] == [str(i) for i in range(1, 11)]
    assert script.most_at_once == 1  # never two of one key at once
    assert ordered.ordering is Ordering.PER_KEY


def test_a_failure_holds_its_key_until_replayed_and_other_keys_go_on(make, start_worker):
    script = Script(fail_first={1}, status=400)  # permanent: the delivery fails at once
    receiver = Receiver(script)
    try:
        config = make.config(endpoint=receiver.url, event_types=["orders"],
                             ordering=Ordering.PER_KEY)
        for n in range(4):
            publish(make, "orders", n, key="order-a")
        publish(make, "orders", 10, key="order-b")
        worker = start_worker(min_backoff=0.2, max_backoff=0.5)
        def key_a():
            with make.pool.transaction() as cursor:
                cursor.execute("SELECT id, status, next_attempt_at IS NULL, blocks_key "
                               "FROM deliveries WHERE config_id = %s "
                               "AND ordering_key = 'order-a' ORDER BY sequence", (config.id,))
                return cursor.fetchall()

        held = [("succeeded", True, False), ("failed", True, True),
                ("pending", True, False), ("pending", True, False)]
        wait_until(lambda: [row[1:] for row in key_a()] == held, timeout=60)
        rows = key_a()
        wait_until(lambda: sorted(n for _, n, _ in script.succeeded) == [0, 10], timeout=60)
        worker.measure_queue()  # the gauges' periodic refresh, now
        assert worker_metric(worker, "webhooks_blocked_ordering_keys") == 1
        # A waiting delivery cannot be expedited past its key's failure.
        with make.pool.transaction() as cursor:
            try:
                deliveries.replay(cursor, PLATFORM, rows[2][0])
            except Exception as refused:
                assert "waits for an earlier delivery of its ordering key" in str(refused)
            else:
                raise AssertionError("a waiting delivery was expedited")
        with make.pool.transaction() as cursor:
            deliveries.replay(cursor, PLATFORM, rows[1][0])  # answered 200 this time
        wait_until(lambda: len(script.succeeded) == 5, timeout=60)
    finally:
        receiver.stop()
    assert [n for key, n, _ in script.succeeded if key == "order-a"] == [0, 1, 2, 3]


def test_without_block_on_failure_the_key_moves_on(make, start_worker):
    script = Script(fail_first={1}, status=400)
    receiver = Receiver(script)
    try:
        make.config(endpoint=receiver.url, event_types=["moves"], ordering=Ordering.PER_KEY,
                    block_on_failure=False)
        for n in range(3):
            publish(make, "moves", n, key="k")
        start_worker(min_backoff=0.2, max_backoff=0.5)
        wait_until(lambda: len(script.succeeded) == 2, timeout=60)
    finally:
        receiver.stop()
    assert [n for _, n, _ in script.succeeded] == [0, 2]


def test_the_receiver_example_of_the_docs_applies_each_event_once_and_logs_a_gap(
        make, start_worker, caplog):
    """The receiver docs/delivery.md shows, run as written: the first answer it gives is lost
    (a 503 after applying), so its retry must not apply again; the event after a failure that
    moved the key on is applied, with a warning of the gap."""
    section = DELIVERY_DOCS.split("## Ordered delivery per key", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    applied: list[int] = []
    receiver_code: dict = {"apply": lambda event: applied.append(event["data"]["n"])}
    exec(example, receiver_code)
    answered: set[int] = set()

    def endpoint(request) -> Reply:
        event = json.loads(request.body)
        n = event["data"]["n"]
        if n == 1:
            return Reply(400)  # fails at once; without blocking, the key moves on
        receiver_code["receive"](request.headers, event)
        first = n not in answered
        answered.add(n)
        return Reply(503 if first and n == 0 else 200)  # the first answer to 0 is lost

    receiver = Receiver(endpoint)
    try:
        make.config(endpoint=receiver.url, event_types=["docs"], ordering=Ordering.PER_KEY,
                    block_on_failure=False)
        for n in range(3):
            publish(make, "docs", n, key="k")
        start_worker(min_backoff=0.2, max_backoff=0.5)
        wait_until(lambda: answered == {0, 2}, timeout=60)
    finally:
        receiver.stop()
    assert applied == [0, 2]
    assert receiver_code["last_applied"] == {"k": 3}
    assert "ordering key k: 3 follows 1" in caplog.text


def test_switched_to_unordered_the_waiting_deliveries_become_due(make):
    config = make.config(event_types=["switch"], ordering=Ordering.PER_KEY)
    for n in range(3):
        publish(make, "switch", n, key="k")
    publish(make, "switch", 9, key=None)  # no key: never waits

    def waiting():
        with make.pool.transaction() as cursor:
            cursor.execute("SELECT count(*) FROM deliveries WHERE config_id = %s "
                           "AND status = 'pending' AND next_attempt_at IS NULL", (config.id,))
            return cursor.fetchone()[0]

    assert waiting() == 2  # the head is due, the two behind it wait
    configs.update(make.pool, PLATFORM, config.id, ordering=Ordering.UNORDERED)
    assert waiting() == 0


def test_switched_to_per_key_the_deliveries_already_pending_take_their_turns(make):
    """The order holds from the switch on: what was pending is numbered in the order it was
    created, after nothing, and only each key's first is due; later events follow it."""
    config = make.config(event_types=["late"])
    for n in range(3):
        publish(make, "late", n, key="k")
    publish(make, "late", 3, key="j")
    publish(make, "late", 9, key=None)  # no key: never numbered, never waits

    def turns():
        with make.pool.transaction() as cursor:
            cursor.execute("SELECT e.payload->>'n', d.ordering_key, d.sequence, "
                           "d.next_attempt_at IS NOT NULL FROM deliveries d "
                           "JOIN events e ON e.id = d.event_id WHERE d.config_id = %s "
                           "ORDER BY d.id", (config.id,))
            return [(int(n), key, sequence, due) for n, key, sequence, due in cursor.fetchall()]

    assert all(due and sequence is None for _, _, sequence, due in turns())
    configs.update(make.pool, PLATFORM, config.id, ordering=Ordering.PER_KEY)
    publish(make, "late", 4, key="k")
    assert turns() == [(0, "k", 1, True), (1, "k", 2, False), (2, "k", 3, False),
                       (3, "j", 1, True), (9, None, None, True), (4, "k", 4, False)]


def test_an_unordered_config_on_the_same_keys_is_not_held(make):
    unordered = make.config(event_types=["both"])
    make.config(event_types=["both"], ordering=Ordering.PER_KEY)
    for n in range(3):
        publish(make, "both", n, key="k")
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT count(*), count(sequence) FROM deliveries WHERE config_id = %s "
                       "AND next_attempt_at IS NOT NULL", (unordered.id,))
        assert cursor.fetchone() == (3, 0)


def test_the_next_delivery_of_a_key_is_woken_for_not_polled_for(make, start_worker):
    """Each success makes the key's next delivery due in the record's transaction, which
    wakes the dispatchers: a chain of five goes through long before a one-minute poll."""
    script = Script(fail_first=set())
    receiver = Receiver(script)
    try:
        make.config(endpoint=receiver.url, event_types=["chain"], ordering=Ordering.PER_KEY)
        start_worker(retry_period=60.0)
        for n in range(5):
            publish(make, "chain", n, key="k")
        wait_until(lambda: len(script.succeeded) == 5, timeout=30)
    finally:
        receiver.stop()
    assert [n for _, n, _ in script.succeeded] == [0, 1, 2, 3, 4]

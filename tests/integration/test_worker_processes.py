"""Real `webhooks worker` processes: sharing one database, and killed mid-flight."""

import collections
import signal
import time

import gevent
import pytest

from db import events
from tests.helpers import wait_until, worker_process
from tests.receivers import Reply


@pytest.fixture
def processes():
    started = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def test_two_workers_attempt_each_of_2000_deliveries_exactly_once(
        make, receiver, database_url, processes):
    make.config(endpoint=receiver.url, event_types=["bulk"])
    batch = [events.new_event(f"bulk-{n}", "bulk", {"n": n}, max_payload=1000)
             for n in range(2000)]
    with make.pool.transaction() as cursor:
        assert events.ingest(cursor, batch, source="api").deliveries_created == 2000
    processes.extend(worker_process(database_url) for _ in range(2))
    receiver.wait_for(2000, timeout=120)
    wait_until(lambda: make.count(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'") == 2000, timeout=30)
    gevent.sleep(0.5)
    seen = collections.Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert len(seen) == 2000
    assert max(seen.values()) == 1
    assert make.count("SELECT count(*) FROM delivery_attempts") == 2000
    owners = make.count(
        "SELECT count(DISTINCT claimed_by) FROM deliveries WHERE claimed_by IS NOT NULL")
    assert owners == 0
    for process in processes:
        process.send_signal(signal.SIGTERM)
    assert [process.wait(30) for process in processes] == [0, 0]


def test_delivery_in_flight_when_a_worker_is_killed_is_recovered(
        make, receiver_factory, database_url, processes):
    first_arrived = gevent.event.Event()

    def respond(request):
        if not first_arrived.is_set():
            first_arrived.set()
            gevent.sleep(30)
        return Reply(200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    settings = {"WEBHOOKS_CLAIM_TIMEOUT": "2s", "WEBHOOKS_HTTP_TIMEOUT": "1500ms",
                "WEBHOOKS_RECOVERY_PERIOD": "250ms"}
    doomed = worker_process(database_url, **settings)
    processes.append(doomed)
    assert first_arrived.wait(30)
    assert make.row(delivery_id)["status"] == "delivering"
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(10)
    processes.append(worker_process(database_url, **settings))
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r,
                     timeout=30)
    assert row["attempt_count"] == 1
    assert [r.headers["webhook-id"] for r in receiver.requests] == [str(delivery_id)] * 2
    assert receiver.requests[1].headers["webhook-attempt"] == "1"


def test_sigterm_lets_inflight_attempts_finish_and_exits_0(
        make, receiver_factory, database_url, processes):
    arrived = gevent.event.Event()

    def respond(request):
        arrived.set()
        gevent.sleep(1.0)
        return Reply(200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    worker = worker_process(database_url)
    processes.append(worker)
    assert arrived.wait(30)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert make.row(delivery_id)["status"] == "succeeded"


def test_sigterm_hands_back_attempts_that_outlive_the_grace(
        make, receiver_factory, database_url, processes):
    arrived = gevent.event.Event()

    def respond(request):
        arrived.set()
        gevent.sleep(20)
        return Reply(200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    worker = worker_process(database_url, WEBHOOKS_SHUTDOWN_TIMEOUT="500ms")
    processes.append(worker)
    assert arrived.wait(30)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    row = make.row(delivery_id)
    assert row["status"] == "pending"
    assert row["claim_token"] is None
    assert row["attempt_count"] == 0


def test_sigterm_exits_within_the_grace_when_collector_and_endpoint_hang(
        make, receiver_factory, database_url, processes):
    """A collector that never answers must not keep a stopping worker past its grace."""
    arrived = gevent.event.Event()

    def hang(request):
        arrived.set()
        gevent.sleep(60)
        return Reply(200)

    collector = receiver_factory(lambda request: (gevent.sleep(60), Reply(200))[1])
    endpoint = receiver_factory(hang)
    make.config(endpoint=endpoint.url)
    _, (delivery_id,) = make.event()
    worker = worker_process(database_url, WEBHOOKS_SHUTDOWN_TIMEOUT="2s",
                            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.port}")
    processes.append(worker)
    assert arrived.wait(30)
    stopping = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    # The grace (2 s) plus the fixed allowances of a stop (claimer, recorder, last flush).
    assert time.monotonic() - stopping < 2 + 4
    row = make.row(delivery_id)
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 0)

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


def _stop_mid_attempt(make, receiver_factory, database_url, processes, *, answer_after,
                      **settings):
    """Start a worker, SIGTERM it while its one attempt waits `answer_after` seconds for the
    endpoint; return (seconds the stop took, exit code, the delivery's row)."""
    arrived = gevent.event.Event()

    def respond(request):
        arrived.set()
        gevent.sleep(answer_after)
        return Reply(200)

    make.config(endpoint=receiver_factory(respond).url)
    _, (delivery_id,) = make.event()
    worker = worker_process(database_url, **settings)
    processes.append(worker)
    assert arrived.wait(30)
    stopping = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    code = worker.wait(30)
    return time.monotonic() - stopping, code, make.row(delivery_id)


def test_sigterm_lets_inflight_attempts_finish_and_exits_0(
        make, receiver_factory, database_url, processes):
    _, code, row = _stop_mid_attempt(make, receiver_factory, database_url, processes,
                                     answer_after=1.0)
    assert code == 0
    assert row["status"] == "succeeded"


def test_sigterm_hands_back_attempts_that_outlive_the_grace(
        make, receiver_factory, database_url, processes):
    _, code, row = _stop_mid_attempt(make, receiver_factory, database_url, processes,
                                     answer_after=20, WEBHOOKS_SHUTDOWN_TIMEOUT="500ms")
    assert code == 0
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 0)


def test_sigterm_exits_within_the_grace_when_collector_and_endpoint_hang(
        make, receiver_factory, database_url, processes):
    """A collector that never answers must not keep a stopping worker past its grace."""
    collector = receiver_factory(lambda request: (gevent.sleep(60), Reply(200))[1])
    took, code, row = _stop_mid_attempt(
        make, receiver_factory, database_url, processes, answer_after=60,
        WEBHOOKS_SHUTDOWN_TIMEOUT="2s",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.port}")
    assert code == 0
    # The grace (2 s) plus the fixed allowances of a stop (claimer, recorder, last flush).
    assert took < 2 + 4
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 0)

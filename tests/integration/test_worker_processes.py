"""Real `webhooks worker` processes: sharing one database, and killed mid-flight."""

import collections
import signal
import sys
from datetime import timedelta
from pathlib import Path

import gevent
import pytest

from db import events
from db.scope import DEFAULT_TENANT_ID
from tests.helpers import PATIENCE, wait_until, worker_process
from tests.receivers import Reply


def test_two_workers_attempt_each_of_2000_deliveries_exactly_once(
        make, receiver, database_url, processes):
    make.config(endpoint=receiver.url, event_types=["bulk"])
    batch = [events.new_event(f"bulk-{n}", "bulk", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                              max_payload=1000)
             for n in range(2000)]
    with make.pool.transaction() as cursor:
        assert events.ingest(cursor, batch, source="api").deliveries_created == 2000
    processes.extend(worker_process(database_url) for _ in range(2))
    receiver.wait_for(2000)
    wait_until(lambda: make.count(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'") == 2000)
    for process in processes:  # a warm stop waits for every answer: nothing more can come
        process.send_signal(signal.SIGTERM)
    assert [process.wait(PATIENCE) for process in processes] == [0, 0]
    seen = collections.Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert len(seen) == 2000
    assert max(seen.values()) == 1
    assert make.count("SELECT count(*) FROM delivery_attempts") == 2000
    owners = make.count(
        "SELECT count(DISTINCT claimed_by) FROM deliveries WHERE claimed_by IS NOT NULL")
    assert owners == 0


def test_delivery_in_flight_when_a_worker_is_killed_is_recovered(
        make, receiver_factory, database_url, processes):
    first_arrived = gevent.event.Event()

    def respond(request):
        if not first_arrived.is_set():
            first_arrived.set()
            gevent.sleep(PATIENCE)  # no answer before the worker dies
        return Reply(200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    # Neither the attempt nor the claim runs out while the test looks, however slow the machine
    settings = {"WEBHOOKS_CLAIM_TIMEOUT": "1h", "WEBHOOKS_HTTP_TIMEOUT": "10m",
                "WEBHOOKS_RECOVERY_PERIOD": "250ms"}
    doomed = worker_process(database_url, **settings)
    processes.append(doomed)
    assert first_arrived.wait(PATIENCE)
    assert make.row(delivery_id)["status"] == "delivering"
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(PATIENCE)
    make.set(delivery_id, claimed_at=make.row(delivery_id)["claimed_at"] - timedelta(hours=2))
    processes.append(worker_process(database_url, **settings))
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r)
    assert row["attempt_count"] == 1
    assert [r.headers["webhook-id"] for r in receiver.requests] == [row["webhook_id"]] * 2
    assert receiver.requests[1].headers["webhook-attempt"] == "1"


def _stop_mid_attempt(make, receiver_factory, database_url, processes, *, answer_after,
                      **settings):
    """Start a worker, SIGTERM it while its one attempt waits for the endpoint, which answers
    `answer_after` seconds after the SIGTERM; return (exit code, the delivery's row)."""
    arrived, terminated = gevent.event.Event(), gevent.event.Event()

    def respond(request):
        arrived.set()
        terminated.wait(PATIENCE)
        gevent.sleep(answer_after)
        return Reply(200)

    make.config(endpoint=receiver_factory(respond).url)
    _, (delivery_id,) = make.event()
    worker = worker_process(database_url, **settings)
    processes.append(worker)
    assert arrived.wait(PATIENCE)
    worker.send_signal(signal.SIGTERM)
    terminated.set()
    code = worker.wait(PATIENCE)
    return code, make.row(delivery_id)


def test_sigterm_lets_inflight_attempts_finish_and_exits_0(
        make, receiver_factory, database_url, processes):
    code, row = _stop_mid_attempt(make, receiver_factory, database_url, processes,
                                  answer_after=1.0)
    assert code == 0
    assert row["status"] == "succeeded"


def test_sigterm_hands_back_attempts_that_outlive_the_grace(
        make, receiver_factory, database_url, processes):
    code, row = _stop_mid_attempt(make, receiver_factory, database_url, processes,
                                  answer_after=3600, WEBHOOKS_SHUTDOWN_TIMEOUT="500ms")
    assert code == 0
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 1)
    (attempt,) = make.attempts(row["id"])
    assert attempt["outcome"] == "interrupted"


def test_sigterm_exits_within_the_grace_when_collector_and_endpoint_hang(
        make, receiver_factory, database_url, processes):
    """A collector that never answers must not keep a stopping worker past its grace.

    Both hang for an hour: the worker exiting within the test's wait shows it gave up on them.
    """
    collector = receiver_factory(lambda request: (gevent.sleep(3600), Reply(200))[1])
    code, row = _stop_mid_attempt(
        make, receiver_factory, database_url, processes, answer_after=3600,
        WEBHOOKS_SHUTDOWN_TIMEOUT="2s",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.port}")
    assert code == 0
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 1)


def _maps(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return maps.read()
    except OSError:
        return ""


@pytest.mark.parametrize("command", [["webhooks"], ["python", "-m", "service"]])
def test_sigterm_while_the_worker_is_still_starting_exits_0(database_url, processes, command):
    program = [str(Path(sys.executable).parent / command[0]), *command[1:]]
    worker = worker_process(database_url, program=program)
    processes.append(worker)
    # psycopg2 loads while the service is being imported, long before the worker runs
    wait_until(lambda: "psycopg2" in _maps(worker.pid), interval=0.001)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(PATIENCE) == 0
    assert b"Traceback" not in worker.stderr.read()

"""Stale claims, fencing and shutdown hand-back."""

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import gevent
import gevent.event

from db import deliveries
from db.deliveries import AttemptResult
from service.dispatch.recovery import recover_stale_claims
from service.runtime.telemetry import Telemetry
from tests.api.conftest import metric_value
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply


def _claim_as_dead_worker(make, delivery_id, age_seconds):
    (claimed,) = deliveries.claim_due(make.pool, owner="dead-worker", limit=1)
    assert claimed.id == delivery_id
    with make.pool.transaction() as cursor:
        cursor.execute(
            "UPDATE deliveries SET claimed_at = now() - make_interval(secs => %s) WHERE id = %s",
            (age_seconds, delivery_id))
    return claimed


def test_stale_claim_returns_to_pending_and_is_delivered(make, receiver, start_worker):
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    _claim_as_dead_worker(make, delivery_id, age_seconds=600)
    telemetry = Telemetry()
    assert recover_stale_claims(make.pool, timeout=300, telemetry=telemetry) == 1
    row = make.row(delivery_id)
    assert row["status"] == "pending"
    assert "dead-worker" in row["last_error"]
    assert b"webhooks_delivery_claims_recovered_total" in telemetry.prometheus_text()
    start_worker()
    receiver.wait_for(1)
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")


def test_fresh_claims_are_left_alone(make):
    make.config()
    _, (delivery_id,) = make.event()
    deliveries.claim_due(make.pool, owner="live", limit=1)
    assert recover_stale_claims(make.pool, timeout=300, telemetry=Telemetry()) == 0
    assert make.row(delivery_id)["status"] == "delivering"


def test_stale_claim_of_an_inactive_config_is_cancelled(make):
    config = make.config()
    _, (delivery_id,) = make.event()
    _claim_as_dead_worker(make, delivery_id, age_seconds=600)
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE configs SET active = false WHERE id = %s", (config.id,))
    recover_stale_claims(make.pool, timeout=300, telemetry=Telemetry())
    assert make.row(delivery_id)["status"] == "cancelled"


def test_a_late_result_from_a_lost_claim_is_kept_but_changes_nothing(make):
    make.config()
    _, (delivery_id,) = make.event()
    first = _claim_as_dead_worker(make, delivery_id, age_seconds=600)
    recover_stale_claims(make.pool, timeout=300, telemetry=Telemetry())
    (second,) = deliveries.claim_due(make.pool, owner="new-worker", limit=1)
    assert second.token != first.token
    late = AttemptResult(
        delivery_id=delivery_id, token=first.token, attempt_number=1, replay_generation=0,
        endpoint="http://x", outcome="success", status_code=200, duration_ms=5,
        response_excerpt="", error=None, next_status="succeeded", next_delay=None,
        last_error=None,
    )
    assert deliveries.record_and_settle(make.pool, [late])[0] == []
    row = make.row(delivery_id)
    assert row["status"] == "delivering" and row["claimed_by"] == "new-worker"
    assert len(make.attempts(delivery_id)) == 1
    current = AttemptResult(**{**late.__dict__, "token": second.token})
    (moved,) = deliveries.record_and_settle(make.pool, [current])[0]
    assert moved.status == "succeeded"


def test_recording_a_result_again_after_an_unanswered_commit_adds_no_attempt(make):
    # Found by the chaos run (tests/reliability): PostgreSQL died after committing a record but
    # before answering; the dispatcher recorded the batch again, and each POST got a second
    # attempt row. One claim makes one request: its result is stored once.
    make.config()
    _, (delivery_id,) = make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    result = AttemptResult(
        delivery_id=delivery_id, token=claimed.token, attempt_number=1, replay_generation=0,
        endpoint="http://x", outcome="http_error", status_code=500, duration_ms=5,
        response_excerpt="", error=None, next_status="pending", next_delay=60.0,
        last_error="HTTP 500",
    )
    (moved,) = deliveries.record_and_settle(make.pool, [result])[0]
    assert moved.status == "pending"
    assert deliveries.record_and_settle(make.pool, [result])[0] == []
    assert [(a["attempt_number"], a["status_code"]) for a in make.attempts(delivery_id)] \
        == [(1, 500)]
    assert make.row(delivery_id)["attempt_count"] == 1


def test_terminal_deliveries_are_never_overwritten(make):
    make.config()
    _, (delivery_id,) = make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    make.set(delivery_id, status="succeeded", claim_token=None, claimed_at=None)
    assert deliveries.release(make.pool, [(delivery_id, claimed.token)]).moved == []
    assert make.row(delivery_id)["status"] == "succeeded"


def test_release_hands_claims_back_due_now(make):
    make.config()
    _, (delivery_id,) = make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    handed = deliveries.release(make.pool, [(delivery_id, claimed.token)])
    assert [m.status for m in handed.moved] == ["pending"]
    assert deliveries.release(make.pool, [(delivery_id, uuid.uuid4())]).moved == []
    (again,) = deliveries.claim_due(make.pool, owner="w2", limit=1)
    assert again.id == delivery_id and again.attempt_count == 0


def test_handed_back_deliveries_keep_their_place_in_the_due_order(make):
    make.config()
    ids = [make.event()[1][0] for _ in range(3)]
    for n, delivery_id in enumerate(ids):  # due one after the other, an hour ago
        make.set(delivery_id, next_attempt_at=datetime.now(UTC) - timedelta(hours=1, minutes=-n))
    first, second = deliveries.claim_due(make.pool, owner="w", limit=2)
    assert [first.id, second.id] == ids[:2]
    deliveries.release(make.pool, [(first.id, first.token)])
    make.set(second.id, claimed_at=second.claimed_at - timedelta(hours=1))
    deliveries.recover_stale(make.pool, timeout=60, limit=10)
    # Both back before the third, which was due after them; none due later than before.
    assert [d.id for d in deliveries.claim_due(make.pool, owner="w2", limit=3)] == ids
    assert "went stale" in make.row(second.id)["last_error"]
    assert make.row(first.id)["last_error"] is None


def test_a_late_result_leaves_the_same_workers_new_claim_of_the_delivery_alone(
        make, receiver_factory, start_worker):
    # Found by the chaos run (tests/reliability): a database outage held a result back until the
    # claim went stale and the same worker claimed the delivery again; recording the late
    # result dropped the new claim's bookkeeping, and its answer was thrown away unrecorded.
    arrived = [gevent.event.Event(), gevent.event.Event()]
    release = [gevent.event.Event(), gevent.event.Event()]
    calls = itertools.count()

    def respond(request):
        n = next(calls)
        if n >= 2:
            return Reply(200)
        arrived[n].set()
        release[n].wait(PATIENCE)
        return Reply(500 if n == 0 else 200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    worker = start_worker()
    assert arrived[0].wait(PATIENCE)
    assert deliveries.recover_stale(make.pool, timeout=0, limit=10).moved  # stale in flight
    assert arrived[1].wait(PATIENCE)  # claimed again by the same worker
    release[0].set()
    wait_until(lambda: len(make.attempts(delivery_id)) == 1)  # the late 500, fenced
    assert make.row(delivery_id)["status"] == "delivering"
    release[1].set()
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r)
    assert row["attempt_count"] == 1
    assert [(a["attempt_number"], a["status_code"]) for a in make.attempts(delivery_id)] \
        == [(1, 500), (1, 200)]
    worker.stop()  # whatever else it sent has been answered by now
    assert len(receiver.requests) == 2


def test_attempts_cut_short_by_a_stop_are_recorded_as_interrupted(make, receiver_factory,
                                                                   start_worker):
    arrived = gevent.event.Event()

    def respond(request):
        if request.headers["webhook-attempt"] == "1":
            arrived.set()
            gevent.sleep(PATIENCE)  # past the stop's grace, however slow the machine
        return Reply(200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    worker = start_worker()
    assert arrived.wait(PATIENCE)
    worker.dispatcher.stop(4.0)  # the rest of the worker (its metrics) still runs

    row = make.row(delivery_id)
    assert (row["status"], row["claim_token"], row["attempt_count"]) == ("pending", None, 1)
    assert "interrupted" in row["last_error"]
    (attempt,) = make.attempts(delivery_id)
    assert (attempt["outcome"], attempt["status_code"], attempt["attempt_number"]) \
        == ("interrupted", 0, 1)
    assert "the worker stopped before the endpoint answered" in attempt["error"]
    assert metric_value(worker.telemetry, "webhooks_delivery_attempts_total",
                        outcome="interrupted", status_class="none") == 1

    start_worker()  # due again at once; the next attempt is number 2
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    assert [a["outcome"] for a in make.attempts(delivery_id)] == ["interrupted", "success"]
    assert receiver.requests[-1].headers["webhook-attempt"] == "2"


def test_claims_never_sent_are_handed_back_without_an_attempt(make, receiver_factory,
                                                             start_worker):
    arrived = gevent.event.Event()

    def respond(request):
        arrived.set()
        gevent.sleep(PATIENCE)  # past the stop's grace, however slow the machine
        return Reply(200)

    make.config(endpoint=receiver_factory(respond).url)
    ids = [make.event()[1][0] for _ in range(5)]
    worker = start_worker(dispatch_concurrency=1)
    assert arrived.wait(PATIENCE)
    worker.dispatcher.stop(4.0)
    rows = [make.row(id) for id in ids]
    assert all(r["status"] == "pending" and r["claim_token"] is None for r in rows)
    assert sorted(r["attempt_count"] for r in rows) == [0, 0, 0, 0, 1]
    assert make.count("SELECT count(*) FROM delivery_attempts") == 1

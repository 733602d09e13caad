"""Stale claims, fencing and shutdown hand-back (SPEC §5)."""

import itertools
import uuid

import gevent
import gevent.event

from db import deliveries
from db.deliveries import AttemptResult
from service.recovery import recover_stale_claims
from service.telemetry import Telemetry
from tests.helpers import wait_until
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
    assert deliveries.record(make.pool, [late]) == []
    row = make.row(delivery_id)
    assert row["status"] == "delivering" and row["claimed_by"] == "new-worker"
    assert len(make.attempts(delivery_id)) == 1
    current = AttemptResult(**{**late.__dict__, "token": second.token})
    (moved,) = deliveries.record(make.pool, [current])
    assert moved.status == "succeeded"


def test_recording_a_result_again_after_an_unanswered_commit_adds_no_attempt(make):
    # Found by the chaos run (bench/chaos): PostgreSQL died after committing a record but
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
    (moved,) = deliveries.record(make.pool, [result])
    assert moved.status == "pending"
    assert deliveries.record(make.pool, [result]) == []
    assert [(a["attempt_number"], a["status_code"]) for a in make.attempts(delivery_id)] \
        == [(1, 500)]
    assert make.row(delivery_id)["attempt_count"] == 1


def test_terminal_deliveries_are_never_overwritten(make):
    make.config()
    _, (delivery_id,) = make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    make.set(delivery_id, status="succeeded", claim_token=None, claimed_at=None)
    assert deliveries.release(make.pool, [(delivery_id, claimed.token)]) == []
    assert make.row(delivery_id)["status"] == "succeeded"


def test_release_hands_claims_back_due_now(make):
    make.config()
    _, (delivery_id,) = make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    assert [m.status for m in deliveries.release(make.pool, [(delivery_id, claimed.token)])] \
        == ["pending"]
    assert deliveries.release(make.pool, [(delivery_id, uuid.uuid4())]) == []
    (again,) = deliveries.claim_due(make.pool, owner="w2", limit=1)
    assert again.id == delivery_id and again.attempt_count == 0


def test_a_late_result_leaves_the_same_workers_new_claim_of_the_delivery_alone(
        make, receiver_factory, start_worker):
    # Found by the chaos run (bench/chaos): a database outage held a result back until the
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
        release[n].wait(30)
        return Reply(500 if n == 0 else 200)

    receiver = receiver_factory(respond)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker()
    assert arrived[0].wait(10)
    assert deliveries.recover_stale(make.pool, timeout=0, limit=10)  # stale while in flight
    assert arrived[1].wait(10)  # claimed again by the same worker
    release[0].set()
    wait_until(lambda: len(make.attempts(delivery_id)) == 1)  # the late 500, fenced
    assert make.row(delivery_id)["status"] == "delivering"
    release[1].set()
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r)
    assert row["attempt_count"] == 1
    assert [(a["attempt_number"], a["status_code"]) for a in make.attempts(delivery_id)] \
        == [(1, 500), (1, 200)]
    gevent.sleep(0.3)
    assert len(receiver.requests) == 2

"""Retention deletes old terminal deliveries with their attempts and orphaned events."""

import json

import pytest

from db import retention
from db.sql import QUERIES
from service.runtime.retention import apply_retention
from service.runtime.telemetry import Telemetry
from tests.helpers import wait_until

DAY = 86400


def _age(make, delivery_id, status, days):
    with make.pool.transaction() as cursor:
        cursor.execute(
            "UPDATE deliveries SET status = %s,"
            " next_attempt_at = CASE WHEN %s = 'pending' THEN next_attempt_at END,"
            " updated_at = now() - make_interval(days => %s) WHERE id = %s",
            (status, status, days, delivery_id))
        cursor.execute(
            "INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number,"
            " replay_generation,"
            " endpoint, outcome, status_code, duration_ms) VALUES (1, %s, 1, 0, 'http://x',"
            " 'success', 200, 1)", (delivery_id,))


@pytest.fixture
def staged(make):
    config = make.config(event_types=["t"])
    other = make.config(event_types=["t"])
    rows = {}
    for name, status, days in [("old_ok", "succeeded", 31), ("new_ok", "succeeded", 29),
                               ("old_failed", "failed", 91), ("new_failed", "failed", 89),
                               ("old_cancelled", "cancelled", 91)]:
        _, (a, b) = make.event(type="t", id=f"evt-{name}")
        _age(make, a, status, days)
        rows[name] = a
        rows[name + "_sibling"] = b
    _, (p, _) = make.event(type="t", id="evt-pending")
    _age(make, p, "pending", 365)
    rows["pending"] = p
    return rows, config, other


def _exists(make, delivery_id):
    return make.count("SELECT count(*) FROM deliveries WHERE id = %s", (delivery_id,)) == 1


def test_terminal_deliveries_past_their_age_go_with_attempts(make, staged):
    rows, _, _ = staged
    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert (deleted.succeeded, deleted.finished) == (1, 2)
    assert not _exists(make, rows["old_ok"])
    assert not _exists(make, rows["old_failed"])
    assert not _exists(make, rows["old_cancelled"])
    for kept in ("new_ok", "new_failed", "pending", "old_ok_sibling"):
        assert _exists(make, rows[kept])
    assert make.count("SELECT count(*) FROM delivery_attempts WHERE delivery_id = ANY(%s)",
                      ([rows["old_ok"], rows["old_failed"]],)) == 0
    # an event goes only when none of its deliveries remain
    assert make.count("SELECT count(*) FROM events WHERE id = 'evt-old_ok'") == 1
    assert deleted.events == 0


def test_events_go_with_their_last_delivery(make):
    make.config(event_types=["solo"])
    _, (only,) = make.event(type="solo", id="evt-solo")
    _age(make, only, "succeeded", 40)
    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert deleted.events == 1
    assert make.count("SELECT count(*) FROM events WHERE id = 'evt-solo'") == 0


def test_zero_disables_each_age(make, staged):
    rows, _, _ = staged
    deleted = retention.run(make.pool, succeeded_age=0, finished_age=90 * DAY)
    assert deleted.succeeded == 0 and deleted.finished == 2
    assert _exists(make, rows["old_ok"])
    deleted = retention.run(make.pool, succeeded_age=0, finished_age=0)
    assert (deleted.succeeded, deleted.finished, deleted.events) == (0, 0, 0)


def test_batches_are_bounded_and_all_expired_rows_go(make):
    make.config(event_types=["bulk"])
    ids = [make.event(type="bulk")[1][0] for _ in range(25)]
    for delivery_id in ids:
        _age(make, delivery_id, "succeeded", 31)
    batches = []
    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=0, batch=10,
                            pause=lambda: batches.append(1))
    assert deleted.succeeded == 25
    assert len(batches) == 3
    assert deleted.events == 25


def test_old_events_without_deliveries_go(make):
    make.event(type="nobody-listens", id="evt-lonely")
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE events SET created_at = now() - interval '31 days'")
    deleted = retention.run(make.pool, succeeded_age=30 * DAY, finished_age=90 * DAY)
    assert deleted.events == 1


def test_only_one_worker_runs_it_at_a_time(make, pool):
    with pool.connection() as holder:
        with holder, holder.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(7245102)")
        assert retention.run(make.pool, succeeded_age=DAY, finished_age=DAY).skipped
        with holder, holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(7245102)")
    assert not retention.run(make.pool, succeeded_age=DAY, finished_age=DAY).skipped


def test_replay_records_are_forgotten_after_a_day(make):
    with make.pool.transaction() as cursor:
        cursor.execute("INSERT INTO replay_requests (tenant_id, idempotency_key,"
                       " request_fingerprint, result, created_at)"
                       " VALUES (1, 'old', 'f', '{}', now() - interval '25h'),"
                       " (1, 'new', 'f', '{}', now())")
    assert retention.run(make.pool, succeeded_age=DAY, finished_age=DAY).replay_requests == 1
    assert make.count("SELECT count(*) FROM replay_requests") == 1


def test_quarantined_messages_go_at_the_age_of_failed_deliveries(make):
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO rejected_events (topic, partition, \"offset\", reason, raw, created_at)"
            " SELECT 't', 0, n, 'invalid_json', 'x', now() - make_interval(days => 100 - n)"
            " FROM generate_series(0, 9) AS n")  # offsets 0..9: 100..91 days old
    deleted = retention.run(make.pool, succeeded_age=DAY, finished_age=95.5 * DAY, batch=2)
    assert deleted.rejected_events == 5
    assert make.count('SELECT min("offset") FROM rejected_events') == 5
    assert retention.run(make.pool, succeeded_age=DAY, finished_age=0).rejected_events == 0
    assert make.count("SELECT count(*) FROM rejected_events") == 5


def test_worker_runs_retention_and_counts_it(make, start_worker):
    make.config(event_types=["w"])
    _, (old,) = make.event(type="w")
    _age(make, old, "succeeded", 31)
    worker = start_worker(retention_period=3600.0)
    wait_until(lambda: not _exists(make, old))
    wait_until(lambda: b'webhooks_retention_deleted_total{kind="succeeded"} 1.0' in
               worker.telemetry.prometheus_text())


def test_apply_retention_reports_skips(make, pool):
    with pool.connection() as holder:
        with holder, holder.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(7245102)")
        settings = type("S", (), {"retention_succeeded": DAY, "retention_failed": DAY})
        assert apply_retention(make.pool, settings, Telemetry()).skipped
        with holder, holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(7245102)")


@pytest.mark.parametrize(("statuses", "index"), [
    (["succeeded"], "deliveries_succeeded_age"),
    (["failed", "cancelled"], "deliveries_finished_age"),
])
def test_each_age_reads_its_own_partial_index_not_the_whole_table(make, statuses, index):
    """One statement serves both ages; the states arrive as a constant array, from which the
    planner must still prove that the partial index of that age applies."""
    with make.pool.transaction() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: make a scan visible
        cursor.execute("EXPLAIN (FORMAT JSON) " + cursor.mogrify(
            QUERIES["delete_expired_deliveries"],
            {"statuses": statuses, "age": DAY, "limit": 10}).decode())
        (plan,) = cursor.fetchone()[0]
    assert f'"Index Name": "{index}"' in json.dumps(plan), json.dumps(plan, indent=1)

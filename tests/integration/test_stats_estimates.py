"""Stats stay cheap on a large table: exact counts up to a bound, estimates beyond it."""

from __future__ import annotations

from db import inspection
from db.counting import Count


def _analyse(pool) -> None:
    with pool.transaction() as cursor:
        cursor.execute("ANALYZE deliveries")


def test_statuses_past_the_bound_are_estimated_and_the_rest_counted(make, pool):
    config = make.config()
    for _ in range(8):
        make.delivery(config, status="succeeded", next_attempt_at=None)
    for _ in range(2):
        make.delivery(config, status="failed", next_attempt_at=None)
    make.delivery(config)
    _analyse(pool)  # a sample of the whole small table: the estimate is the true count
    stats = inspection.stats(pool, exact_up_to=5)
    assert stats.by_status == {
        "pending": Count(1, estimated=False), "delivering": Count(0, estimated=False),
        "succeeded": Count(8, estimated=True), "failed": Count(2, estimated=False),
        "cancelled": Count(0, estimated=False),
    }
    assert stats.queue_depth == 1


def test_rows_added_since_the_statistics_never_count_below_the_bound(make, pool):
    config = make.config()
    _analyse(pool)  # statistics of an empty table
    for _ in range(7):
        make.delivery(config, status="failed", next_attempt_at=None)
    stats = inspection.stats(pool, exact_up_to=5)
    assert stats.by_status["failed"].estimated
    assert stats.by_status["failed"].value >= 5
    assert stats.by_status["succeeded"] == Count(0, estimated=False)


def test_a_large_pending_backlog_is_estimated_in_the_queue_depth(make, pool):
    config = make.config()
    for _ in range(6):
        make.delivery(config)
    _analyse(pool)
    stats = inspection.stats(pool, exact_up_to=5)
    assert stats.by_status["pending"] == Count(6, estimated=True)
    assert stats.queue_depth == 6


def test_a_terminal_status_estimated_large_is_not_counted_but_the_queue_is(make, pool):
    config = make.config()
    for _ in range(4):
        make.delivery(config, status="succeeded", next_attempt_at=None)
    for _ in range(4):
        make.delivery(config)
    _analyse(pool)
    with pool.transaction() as cursor:  # after the statistics: seen by counts only
        cursor.execute("UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL")
    stats = inspection.stats(pool, exact_up_to=10, large=3)
    assert stats.by_status["succeeded"] == Count(4, estimated=True)  # the stale estimate
    assert stats.by_status["pending"] == Count(0, estimated=False)  # the queue, counted
    assert stats.by_status["cancelled"] == Count(8, estimated=False)

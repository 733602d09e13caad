"""The buckets of attemptHistory: whole buckets since the epoch, the last one holding now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from db.inspection import AttemptCount, AttemptHistory
from graphql_schema.history import summarise, window_start

HOUR = timedelta(hours=1)


@pytest.mark.parametrize(("now", "span", "bucket", "start"), [
    (datetime(2024, 5, 1, 12, 30, tzinfo=UTC), 3 * HOUR, HOUR,
     datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    (datetime(2024, 5, 1, 12, 0, tzinfo=UTC), 3 * HOUR, HOUR,
     datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    (datetime(2024, 5, 1, 12, 7, tzinfo=UTC), HOUR, timedelta(minutes=15),
     datetime(2024, 5, 1, 11, 15, tzinfo=UTC)),
    (datetime(2024, 5, 1, 12, 7, tzinfo=UTC), timedelta(minutes=5), HOUR,
     datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
])
def test_window_start_is_the_first_of_the_whole_buckets_up_to_now(now, span, bucket, start):
    assert window_start(now, span, bucket) == start


def test_summarise_fills_empty_buckets_and_totals_each_config():
    since = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    rows = AttemptHistory(complete=False, counts=[
        AttemptCount("a", "alpha", since, "success", 3),
        AttemptCount("a", "alpha", since + 2 * HOUR, "http_error", 1),
        AttemptCount("b", None, since + 2 * HOUR, "success", 5),
    ])
    history = summarise(rows, since=since, bucket=HOUR, until=since + 2 * HOUR + timedelta(
        minutes=30))
    assert [b.attempts for b in history.buckets] == [3, 0, 6]
    assert [b.success_rate() for b in history.buckets] == [1.0, None, 5 / 6]
    assert [(c.config_id, c.attempts, c.succeeded) for c in history.configs] == [
        ("b", 5, 5), ("a", 4, 3)]
    assert history.configs[1].success_rate() == 0.75
    assert history.complete is False and history.bucket_seconds == 3600

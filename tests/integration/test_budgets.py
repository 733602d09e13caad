"""The retry budget of a generation, with small durations."""

from tests.helpers import wait_until
from tests.receivers import Reply


def _failing(receiver_factory):
    return receiver_factory(lambda request: Reply(500, body=b"down"))


def test_generation_ends_failed_after_max_attempts(make, receiver_factory, start_worker):
    receiver = _failing(receiver_factory)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=0.05, max_backoff=0.1, max_attempts=3)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    assert row["attempt_count"] == 3
    assert "3 attempts" in row["last_error"] and "WEBHOOKS_MAX_ATTEMPTS" in row["last_error"]
    assert row["last_error"].startswith("HTTP 500")
    assert [r.headers["webhook-attempt"] for r in receiver.requests] == ["1", "2", "3"]
    assert {r.headers["webhook-id"] for r in receiver.requests} == {row["webhook_id"]}
    assert [a["attempt_number"] for a in make.attempts(delivery_id)] == [1, 2, 3]


def test_generation_ends_failed_when_the_window_closes(make, receiver_factory, start_worker):
    receiver = _failing(receiver_factory)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=0.5, max_backoff=1.0, max_attempts=1000, retry_window=5.0)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    assert "WEBHOOKS_RETRY_WINDOW" in row["last_error"]
    # At least one retry fits in 5 s however busy the machine; at most one per 0.5 s does.
    assert 2 <= row["attempt_count"] <= 11
    assert len(make.attempts(delivery_id)) == row["attempt_count"]


def test_retries_then_success(make, receiver_factory, start_worker):
    replies = iter([Reply(503), Reply(action="reset"), Reply(200)])
    receiver = receiver_factory(lambda request: next(replies))
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=0.05, max_backoff=0.1)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "succeeded" and r)
    assert row["attempt_count"] == 3
    assert [a["outcome"] for a in make.attempts(delivery_id)] == [
        "http_error", "network_error", "success"]
    assert row["last_error"] is None

"""Each row of the classification table against a real endpoint: what one attempt does."""

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

HOUR = 3600.0


def _after_first_attempt(make, receiver_factory, start_worker, reply, **settings):
    receiver = receiver_factory(lambda request: reply)
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=HOUR, **settings)
    row = wait_until(lambda: (r := make.row(delivery_id))["attempt_count"] == 1 and r)
    return row, make.attempts(delivery_id), receiver


def _assert_due_after(row, before, seconds):
    """Assert the delivery is due `seconds` after its attempt, which ran between `before`
    and now (however long the machine took)."""
    after = datetime.now(UTC)
    slack = timedelta(seconds=1)  # HTTP dates have whole seconds
    assert before + timedelta(seconds=seconds) - slack <= row["next_attempt_at"]
    assert row["next_attempt_at"] <= after + timedelta(seconds=seconds) + slack


@pytest.mark.parametrize("code", [200, 201, 202, 204, 299])
def test_2xx_succeeds(make, receiver_factory, start_worker, code):
    row, (attempt,), _ = _after_first_attempt(make, receiver_factory, start_worker, Reply(code))
    assert row["status"] == "succeeded"
    assert attempt["outcome"] == "success"
    assert row["last_error"] is None


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 504, 599])
def test_408_429_and_5xx_are_retried(make, receiver_factory, start_worker, code):
    before = datetime.now(UTC)
    row, (attempt,), _ = _after_first_attempt(make, receiver_factory, start_worker, Reply(code))
    assert row["status"] == "pending"
    assert row["last_status_code"] == code
    assert row["last_error"] == f"HTTP {code}"
    assert attempt["outcome"] == "http_error" and attempt["status_code"] == code
    _assert_due_after(row, before, HOUR)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 405, 409, 410, 413, 422, 451, 499,
                                  301, 302, 303, 307, 308])
def test_other_4xx_and_3xx_fail_at_once(make, receiver_factory, start_worker, code):
    reply = Reply(code, headers={"Location": "http://127.0.0.1:1/elsewhere"})
    row, (_attempt,), receiver = _after_first_attempt(make, receiver_factory, start_worker, reply)
    assert row["status"] == "failed"
    assert row["next_attempt_at"] is None
    assert row["last_error"].startswith(f"HTTP {code}: ")
    assert len(receiver.requests) == 1  # redirects not followed


def test_response_body_never_affects_classification(make, receiver_factory, start_worker):
    reply = Reply(200, body=b'{"error": "failed", "retry": true}')
    row, _, _ = _after_first_attempt(make, receiver_factory, start_worker, reply)
    assert row["status"] == "succeeded"


def test_connection_refused_is_retried_with_status_0(make, start_worker):
    make.config(endpoint="http://127.0.0.1:9/hook")
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=HOUR)
    row = wait_until(lambda: (r := make.row(delivery_id))["attempt_count"] == 1 and r)
    (attempt,) = make.attempts(delivery_id)
    assert row["status"] == "pending"
    assert row["last_status_code"] == 0
    assert attempt["outcome"] == "network_error"
    assert attempt["status_code"] == 0
    assert "refused" in attempt["error"].lower()
    assert "host=" not in attempt["error"]  # the message, not urllib3's connection repr


@pytest.mark.parametrize("action", ["reset", "close", "raw"])
def test_broken_connections_are_retried(make, receiver_factory, start_worker, action):
    reply = Reply(action=action, raw=b"this is not HTTP\r\n\r\n")
    row, (attempt,), _ = _after_first_attempt(make, receiver_factory, start_worker, reply)
    assert row["status"] == "pending"
    assert attempt["status_code"] == 0
    assert attempt["outcome"] == "network_error"
    assert attempt["error"]


def test_timeout_is_retried_and_bounded(make, receiver_factory, start_worker):
    row, (attempt,), _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(action="hang"), http_timeout=0.5)
    assert row["status"] == "pending"
    assert attempt["outcome"] == "timeout"
    assert attempt["status_code"] == 0
    assert attempt["error"] == "timed out after 0.5s"
    assert 400 <= attempt["duration_ms"] < PATIENCE * 1000  # the endpoint hangs for an hour


def test_slow_body_counts_against_the_whole_attempt_timeout(make, receiver_factory,
                                                             start_worker):
    reply = Reply(200, body=b"x" * 400, action="slow_body")  # 200 s, a byte per 0.5 s
    _row, (attempt,), _ = _after_first_attempt(
        make, receiver_factory, start_worker, reply, http_timeout=1.0)
    assert attempt["outcome"] == "timeout"
    assert attempt["duration_ms"] < PATIENCE * 1000


def test_at_most_64_kib_of_the_body_is_kept(make, receiver_factory, start_worker):
    reply = Reply(500, body=b"a" * (200 * 1024))
    _, (attempt,), _ = _after_first_attempt(make, receiver_factory, start_worker, reply)
    assert len(attempt["response_excerpt"]) == 64 * 1024


def test_endless_body_does_not_hang_or_grow(make, receiver_factory, start_worker):
    row, (attempt,), _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(200, action="endless_body"))
    assert row["status"] == "succeeded"
    assert len(attempt["response_excerpt"]) == 64 * 1024


@pytest.mark.parametrize("header", ["7200", "date"])
def test_retry_after_longer_than_backoff_is_honoured(make, receiver_factory, start_worker,
                                                     header):
    value = header
    if header == "date":
        value = format_datetime(datetime.now(UTC) + timedelta(hours=2), usegmt=True)
    before = datetime.now(UTC)
    row, _, _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(503, headers={"Retry-After": value}))
    _assert_due_after(row, before, 2 * HOUR)


def test_retry_after_is_capped(make, receiver_factory, start_worker):
    before = datetime.now(UTC)
    row, _, _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(429, headers={"Retry-After": "86400"}))
    _assert_due_after(row, before, 6 * HOUR)


def test_retry_after_shorter_than_backoff_is_ignored(make, receiver_factory, start_worker):
    before = datetime.now(UTC)
    row, _, _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(429, headers={"Retry-After": "5"}))
    _assert_due_after(row, before, HOUR)


def test_retry_after_never_passes_the_window(make, receiver_factory, start_worker):
    before = datetime.now(UTC)
    row, _, _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(503, headers={"Retry-After": "20000"}),
        retry_window=3 * HOUR)
    _assert_due_after(row, before, 3 * HOUR)


def test_invalid_retry_after_falls_back_to_backoff(make, receiver_factory, start_worker):
    before = datetime.now(UTC)
    row, _, _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(503, headers={"Retry-After": "soon"}))
    _assert_due_after(row, before, HOUR)


@pytest.mark.parametrize(("code", "status"), [(409, "pending"), (503, "failed"), (429, "failed")])
def test_the_retryable_status_codes_are_a_setting(make, receiver_factory, start_worker, code,
                                                  status):
    row, (attempt,), _ = _after_first_attempt(
        make, receiver_factory, start_worker, Reply(code),
        retryable_status_codes=frozenset({409}))
    assert row["status"] == status
    assert attempt["status_code"] == code
    if status == "failed":
        assert "not in WEBHOOKS_RETRYABLE_STATUS_CODES" in row["last_error"]

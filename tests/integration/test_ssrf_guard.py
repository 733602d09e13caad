"""With private endpoints not allowed, nothing connects to loopback or private addresses."""

from datetime import UTC, datetime

import pytest

from tests.helpers import wait_until
from tests.receivers import Reply


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.1", "[::1]",
     "[::ffff:127.0.0.1]", "0.0.0.0"],
)
def test_private_endpoints_are_refused_before_connecting(make, receiver, start_worker, host):
    make.config(endpoint=f"http://{host}:{receiver.port}/hook")
    _, (delivery_id,) = make.event()
    start_worker(allow_private_endpoints=False)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    (attempt,) = make.attempts(delivery_id)
    assert attempt["outcome"] == "blocked"
    assert attempt["status_code"] == 0
    assert "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS" in row["last_error"]
    assert receiver.connections == 0


def test_private_endpoints_are_reached_when_allowed(make, receiver, start_worker):
    make.config(endpoint=f"http://localhost:{receiver.port}/hook")
    make.event()
    start_worker(allow_private_endpoints=True)
    receiver.wait_for(1)


def test_a_blocked_attempt_is_kept_as_history_and_spends_none_of_the_budget(
        make, receiver_factory, start_worker):
    """Two requests go out (503, then 503 asking for an hour's wait); by the next attempt the
    endpoint is one the guard refuses: the delivery fails with the guard's error, the stopped
    attempt is in its history, and its attempt count and retry window are what the two
    requests that went out left. A delivery blocked at its first attempt has spent nothing."""
    answers = iter([Reply(503), Reply(503, headers={"Retry-After": "3600"})])
    receiver = receiver_factory(lambda request: next(answers))
    config = make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    allowed = start_worker(allow_private_endpoints=True, min_backoff=0.05, max_backoff=0.05)
    before = wait_until(lambda: (r := make.row(delivery_id))["attempt_count"] == 2
                        and r["status"] == "pending" and r)
    allowed.stop()
    make.set(delivery_id, next_attempt_at=datetime.now(UTC))  # the hour has passed
    fresh = make.delivery(config)
    connections = receiver.connections

    start_worker(allow_private_endpoints=False)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    assert (row["attempt_count"], row["generation_started_at"], row["replay_generation"]) == (
        2, before["generation_started_at"], 0)
    assert row["last_error"].startswith("blocked: 127.0.0.1 resolves to 127.0.0.1 (loopback)")
    assert [(a["attempt_number"], a["outcome"], a["error"])
            for a in make.attempts(delivery_id)] == [
        (1, "http_error", None), (2, "http_error", None), (3, "blocked", row["last_error"])]
    assert (len(receiver.requests), receiver.connections) == (2, connections)  # none went out

    first = wait_until(lambda: (r := make.row(fresh))["status"] == "failed" and r)
    assert (first["attempt_count"], first["generation_started_at"]) == (0, None)
    assert [(a["attempt_number"], a["outcome"]) for a in make.attempts(fresh)] == [
        (1, "blocked")]

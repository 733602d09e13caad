"""Hostile endpoints: workers stay within memory and time bounds and record clear errors."""

from pathlib import Path

import pytest

from tests.catalogues.hostile_endpoints import KINDS, HostileEndpoints
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

HOUR = 3600.0


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _first_attempt(make, start_worker, endpoint, **settings):
    make.config(endpoint=endpoint)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=HOUR, **settings)
    row = wait_until(lambda: (r := make.row(delivery_id))["attempt_count"] == 1 and r)
    (attempt,) = make.attempts(delivery_id)
    return row, attempt


@pytest.fixture
def hostile_endpoints(tmp_path):
    endpoints = HostileEndpoints(tmp_path)
    endpoints.start()
    yield endpoints
    endpoints.stop()


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_each_hostile_endpoint_is_bounded_and_explained(make, start_worker, hostile_endpoints,
                                                        kind):
    # The kinds that must end by the timeout get a short one; the others a long one, so that
    # a busy machine cannot turn their answer into a timeout.
    timeout = 2.0 if kind.outcome == "timeout" else PATIENCE / 2
    row, attempt = _first_attempt(make, start_worker, hostile_endpoints.url(kind),
                                  http_timeout=timeout, claim_timeout=2 * PATIENCE)
    assert (attempt["outcome"], attempt["status_code"]) == (kind.outcome, kind.status_code)
    assert attempt["duration_ms"] < PATIENCE * 1000  # ended by the timeout, not the endpoint
    assert len(attempt["response_excerpt"] or "") <= 64 * 1024
    if kind.error is not None:
        assert kind.error in (attempt["error"] or row["last_error"])
    if kind.name == "redirect_internal":  # permanent: a redirect is never followed
        assert row["status"] == "failed"
        assert hostile_endpoints.connections["internal"] == 0
    elif kind.outcome != "success":
        assert row["status"] == "pending"


def test_many_hostile_bodies_do_not_grow_memory(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(200, action="endless_body"))
    make.config(endpoint=receiver.url)
    for _ in range(10):  # warm up allocators, pools and caches
        make.event()
    start_worker(dispatch_concurrency=20, min_backoff=HOUR)
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'succeeded'") == 10)
    before = _rss_mb()
    for _ in range(100):
        make.event()
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'succeeded'") == 110)
    # 100 endpoints each offering 10 GB: at most 64 KiB of each is read
    assert _rss_mb() - before < 60


def test_worker_keeps_delivering_while_endpoints_misbehave(make, receiver_factory,
                                                           start_worker):
    bad = receiver_factory(lambda request: Reply(action="hang"))
    good = receiver_factory()
    make.config(endpoint=bad.url, event_types=["bad"])
    make.config(endpoint=good.url, event_types=["good"])
    for _ in range(5):
        make.event(type="bad")
    # The hung attempts outlast any wait of the test: the good ones must pass beside them.
    start_worker(dispatch_concurrency=10, http_timeout=3600.0, claim_timeout=4 * 3600.0,
                 shutdown_timeout=1.0)  # the hung attempts are cut short at the end
    bad.wait_for(5)
    for _ in range(20):
        make.event(type="good")
    good.wait_for(20)

"""With private endpoints not allowed, nothing connects to loopback or private addresses."""

import pytest

from tests.helpers import wait_until


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

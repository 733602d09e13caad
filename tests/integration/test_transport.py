"""The sender's HTTP plumbing against real endpoints: keep-alive reuse and its check, the
request target, the answer handed back (service/dispatch/transport.py)."""

from __future__ import annotations

import greenlet
import pytest

from db.vocabulary import AttemptOutcome
from service.dispatch import transport
from service.dispatch.sender import Sender
from tests.helpers import wait_until
from tests.receivers import Reply

ANSWER_THEN_HANG_UP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"  # keep-alive, then closed


@pytest.fixture(params=["private allowed", "guarded"])
def sender(request, monkeypatch):
    """A sender with each adapter: the guarded one told that 127.0.0.1 is public."""
    guarded = request.param == "guarded"
    if guarded:
        monkeypatch.setattr(transport, "refusal", lambda host, addresses: None)
    sender = Sender(timeout=10, concurrency=4, allow_private=not guarded)
    assert isinstance(sender.adapter, transport.GuardedAdapter) is guarded
    yield sender
    sender.close()


def _pooled_connections(sender: Sender, port: int) -> list:
    """Return the idle connections the sender keeps to 127.0.0.1:`port`."""
    pools = sender.adapter.poolmanager.pools
    return [connection for key in pools.keys() if key.key_port == port  # noqa: SIM118 (no iter)
            for connection in list(pools[key].pool.queue) if connection is not None]


def test_a_healthy_connection_is_reused(sender, receiver):
    for _ in range(5):
        assert sender.post(receiver.url, b"{}", {}).outcome == AttemptOutcome.SUCCESS
    assert receiver.connections == 1
    assert len(receiver.requests) == 5


def test_a_connection_the_endpoint_closed_while_idle_is_not_reused(sender, receiver_factory):
    receiver = receiver_factory(lambda request: Reply(action="raw", raw=ANSWER_THEN_HANG_UP))
    assert sender.post(receiver.url, b"{}", {}).outcome == AttemptOutcome.SUCCESS
    wait_until(lambda: receiver.closed == 1)  # the endpoint hung up after its answer

    second = sender.post(receiver.url, b"{}", {})

    assert second.outcome == AttemptOutcome.SUCCESS, second.error
    assert receiver.connections == 2  # a new connection, not an error on the dead one


def test_the_reuse_check_asks_the_kernel_without_switching_to_the_event_loop(
        sender, receiver, receiver_factory):
    hangs_up = receiver_factory(lambda request: Reply(action="raw", raw=ANSWER_THEN_HANG_UP))
    sender.post(receiver.url, b"{}", {})
    sender.post(hangs_up.url, b"{}", {})
    wait_until(lambda: hangs_up.closed == 1)
    healthy, = _pooled_connections(sender, receiver.port)
    closed, = _pooled_connections(sender, hangs_up.port)
    switches = []
    previous = greenlet.settrace(lambda event, args: switches.append(event))
    try:
        verdicts = (healthy.is_connected, closed.is_connected)
    finally:
        greenlet.settrace(previous)
    assert verdicts == (True, False)
    assert switches == []


def test_the_request_target_is_the_endpoints_path_and_query(sender, receiver):
    for _ in range(2):  # worked out once per endpoint: the second comes from the cache
        sender.post(f"http://127.0.0.1:{receiver.port}/a/b%20c?x=1&y=%2F", b"{}", {})
        sender.post(f"http://127.0.0.1:{receiver.port}", b"{}", {})
    assert [r.path for r in receiver.requests] == ["/a/b%20c?x=1&y=%2F", "/"] * 2


def test_the_answers_headers_are_read_in_any_case(sender, receiver_factory):
    receiver = receiver_factory(lambda request: Reply(status=503, headers={"retry-AFTER": "7"}))
    response = sender.post(receiver.url, b"{}", {})
    assert (response.outcome, response.status_code, response.retry_after) == (
        AttemptOutcome.HTTP_ERROR, 503, "7")

"""Whatever an endpoint sends is stored safely, and one unstorable result stalls no other."""

import gzip
from dataclasses import replace

import pytest

from db import deliveries
from db.deliveries import AttemptResult
from db.errors import InvalidData
from service.dispatch.dispatcher import Dispatcher
from service.dispatch.sender import Sender
from service.runtime.telemetry import Telemetry
from tests.helpers import wait_until
from tests.receivers import Reply

HOUR = 3600.0
# A claim the worker never records comes back only after this: waits of any length cannot see
# the stale-claim recovery deliver what a stalled record held back.
NO_RECOVERY = {"claim_timeout": 10 * HOUR}
GZIPPED = gzip.compress(b'{"ok": true}')
BINARY = bytes(range(256))


def _raw(head: bytes, body: bytes = b"") -> Reply:
    return Reply(action="raw", raw=head + b"\r\n\r\n" + body)


CASES = {
    "nul_in_body": (Reply(200, body=b"ok\x00bad"), "succeeded", "ok\\x00bad"),
    "gzip_body_to_identity_request": (
        Reply(200, headers={"Content-Encoding": "gzip"}, body=GZIPPED), "succeeded",
        "\x1f\\x8b\x08\\x00"),
    "binary_body": (Reply(200, body=BINARY), "succeeded", "\\x00\x01\x02"),
    "nul_in_error_body": (Reply(500, body=b"\x00" * 10), "pending", "\\x00" * 10),
    "nul_in_header": (Reply(200, headers={"X-Trace": "a\x00b"}, body=b"fine"), "succeeded",
                      "fine"),
    "nul_in_reason_phrase": (_raw(b"HTTP/1.1 503 Busy\x00Now\r\nContent-Length: 3", b"b\x00y"),
                             "pending", "b\\x00y"),
    "nul_in_retry_after": (Reply(503, headers={"Retry-After": "1\x00"}, body=b""), "pending",
                           ""),
    "nul_in_location": (Reply(302, headers={"Location": "http://127.0.0.1/\x00x"},
                              body=b"moved\xff"), "failed", "moved\\xff"),
    "nul_in_status_line": (_raw(b"HTTP/1.1 2\x0000 OK"), "pending", None),
}


@pytest.mark.parametrize("case", CASES)
def test_hostile_response_is_stored_and_a_healthy_neighbour_is_recorded(
        make, receiver_factory, start_worker, case):
    reply, status, excerpt = CASES[case]
    hostile = receiver_factory(lambda request: reply)
    healthy = receiver_factory()
    hostile_config = make.config(endpoint=hostile.url)
    make.config(endpoint=healthy.url)
    _, ids = make.event()
    start_worker(min_backoff=HOUR, **NO_RECOVERY)

    rows = wait_until(lambda: all(r["attempt_count"] == 1 for r in rs) and rs
                      if (rs := [make.row(id) for id in ids]) else None)
    hostile_row, healthy_row = sorted(rows, key=lambda r: r["config_id"] != hostile_config.id)
    assert healthy_row["status"] == "succeeded"
    assert hostile_row["status"] == status
    (attempt,) = make.attempts(hostile_row["id"])
    if excerpt is None:
        assert attempt["status_code"] == 0
        assert "\x00" not in attempt["error"]
        assert "\\x00" in attempt["error"]
    else:
        assert attempt["response_excerpt"].startswith(excerpt)
        assert "\x00" not in attempt["response_excerpt"]


def test_a_binary_body_is_kept_whole_and_escaped(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(200, body=BINARY))
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(**NO_RECOVERY)
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    (attempt,) = make.attempts(delivery_id)
    ascii_part = "".join(chr(byte) for byte in range(1, 128))
    assert attempt["response_excerpt"] == (
        "\\x00" + ascii_part + "".join(f"\\x{byte:02x}" for byte in range(128, 256)))


def test_the_excerpt_limit_holds_for_escaped_bodies(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(200, body=b"\x00" * 100_000))
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(**NO_RECOVERY)
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    (attempt,) = make.attempts(delivery_id)
    assert attempt["response_excerpt"] == "\\x00" * (64 * 1024 // 4)


def test_a_nul_answering_endpoint_spends_its_budget(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(500, body=b"err\x00or"))
    make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=0.01, max_backoff=0.01, max_attempts=3, **NO_RECOVERY)
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    assert row["attempt_count"] == 3
    assert "retry budget exhausted" in row["last_error"]
    attempts = make.attempts(delivery_id)
    assert [a["response_excerpt"] for a in attempts] == ["err\\x00or"] * 3


class _NulAppendingSender(Sender):
    """A real sender whose responses from one endpoint carry a NUL the database refuses."""

    def __init__(self, poisoned_url: str, **options) -> None:
        super().__init__(**options)
        self.poisoned_url = poisoned_url

    def post(self, url, body, headers):
        response = super().post(url, body, headers)
        if url == self.poisoned_url:
            return replace(response, excerpt=f"{response.excerpt}\x00",
                           error="bad\x00error")
        return response


def test_an_unstorable_result_is_isolated_from_its_batch(pool, settings, make,
                                                        receiver_factory):
    poisoned, healthy = receiver_factory(), receiver_factory()
    make.config(endpoint=poisoned.url, event_types=["poisoned"])
    make.config(endpoint=healthy.url, event_types=["healthy"])
    healthy_ids = [make.event(type="healthy")[1][0] for _ in range(10)]
    _, (poisoned_id,) = make.event(type="poisoned")
    healthy_ids += [make.event(type="healthy")[1][0] for _ in range(10)]
    sender = _NulAppendingSender(poisoned.url, timeout=settings.http_timeout, concurrency=50,
                                 allow_private=True)
    dispatcher = Dispatcher(pool, settings, owner="test-worker", telemetry=Telemetry(),
                            sender=sender)  # no stale-claim recovery runs beside it
    dispatcher.start()
    try:
        wait_until(lambda: all(make.row(id)["status"] == "succeeded"
                               for id in [*healthy_ids, poisoned_id]))
    finally:
        dispatcher.stop(settings.shutdown_timeout)
    for id in healthy_ids:
        (attempt,) = make.attempts(id)
        assert attempt["response_excerpt"] == "ok"
    (attempt,) = make.attempts(poisoned_id)
    assert attempt["response_excerpt"] is None
    assert attempt["error"] == "the endpoint's response could not be stored"
    assert attempt["status_code"] == 200
    assert make.row(poisoned_id)["last_error"] is None


def test_a_nul_the_driver_cannot_send_is_invalid_data(pool, make):
    delivery_id = make.delivery()
    (claimed,) = deliveries.claim_due(pool, owner="test", limit=1)
    result = AttemptResult(
        delivery_id=delivery_id, token=claimed.token, attempt_number=1, replay_generation=0,
        endpoint=claimed.endpoint, outcome="success", status_code=200, duration_ms=1,
        response_excerpt="ok\x00bad", error=None, next_status="succeeded", next_delay=None,
        last_error=None)
    with pytest.raises(InvalidData, match="NUL"):
        deliveries.record_and_settle(pool, [result])[0]
    assert deliveries.record_and_settle(pool, [replace(result, response_excerpt="ok")])[0]

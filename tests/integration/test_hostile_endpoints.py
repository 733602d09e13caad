"""Hostile endpoints: workers stay within memory and time bounds and record clear errors."""

import socket
import ssl
import subprocess
from pathlib import Path

import gevent
import pytest
from gevent.server import StreamServer

from tests.helpers import wait_until
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
    row = wait_until(lambda: (r := make.row(delivery_id))["attempt_count"] == 1 and r,
                     timeout=20)
    (attempt,) = make.attempts(delivery_id)
    return row, attempt


@pytest.mark.parametrize(
    ("action", "outcome"),
    [("huge_length", "timeout"), ("endless_headers", "network_error"),
     ("long_header", "network_error"), ("endless", "success")],
)
def test_hostile_responses_are_bounded_and_explained(make, receiver_factory, start_worker,
                                                     action, outcome):
    receiver = receiver_factory(lambda request: Reply(200, action=action))
    row, attempt = _first_attempt(make, start_worker, receiver.url, http_timeout=2.0)
    assert attempt["outcome"] == outcome
    assert attempt["duration_ms"] < 5000
    if outcome != "success":
        assert row["status"] == "pending" and attempt["error"]
    assert len(attempt["response_excerpt"] or "") <= 64 * 1024


def test_many_hostile_bodies_do_not_grow_memory(make, receiver_factory, start_worker):
    receiver = receiver_factory(lambda request: Reply(200, action="endless"))
    make.config(endpoint=receiver.url)
    for _ in range(10):  # warm up allocators, pools and caches
        make.event()
    start_worker(dispatch_concurrency=20, min_backoff=HOUR)
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'succeeded'") == 10, timeout=30)
    before = _rss_mb()
    for _ in range(100):
        make.event()
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'succeeded'") == 110, timeout=60)
    # 100 endpoints each offering 10 GB: at most 64 KiB of each is read
    assert _rss_mb() - before < 60


def test_redirects_to_internal_addresses_are_not_followed(make, receiver_factory,
                                                           start_worker):
    internal = receiver_factory()
    redirect = receiver_factory(lambda request: Reply(
        302, headers={"Location": internal.url}))
    row, _attempt = _first_attempt(make, start_worker, redirect.url)
    assert row["status"] == "failed"
    assert "redirects are not followed" in row["last_error"]
    assert internal.connections == 0


def test_tls_to_a_plain_http_port_is_a_clear_tls_error(make, start_worker):
    def plain_http(sock, address):  # answers in clear text whatever arrives, as nginx does
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        sock.close()

    server = StreamServer(("127.0.0.1", 0), plain_http)
    server.start()
    try:
        row, attempt = _first_attempt(make, start_worker,
                                      f"https://127.0.0.1:{server.server_port}/hook")
    finally:
        server.stop()
    assert attempt["outcome"] == "network_error"
    assert attempt["error"].startswith("TLS error")
    assert row["status"] == "pending"


@pytest.fixture
def self_signed_server(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    connections = []

    def handle(sock, address):
        connections.append(address)
        sock.close()

    server = StreamServer(("127.0.0.1", 0), handle, ssl_context=context)
    server.start()
    yield server, connections
    server.stop()


def test_untrusted_certificates_are_refused(make, start_worker, self_signed_server):
    server, _ = self_signed_server
    _row, attempt = _first_attempt(make, start_worker,
                                  f"https://127.0.0.1:{server.server_port}/hook")
    assert attempt["outcome"] == "network_error"
    assert attempt["error"].startswith("TLS error")
    assert "certificate" in attempt["error"].lower()


def test_a_listener_that_never_accepts_times_out(make, start_worker):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)  # accepts nothing: connections pile up in the backlog
    try:
        _row, attempt = _first_attempt(
            make, start_worker, f"http://127.0.0.1:{listener.getsockname()[1]}/hook",
            http_timeout=1.0)
    finally:
        listener.close()
    assert attempt["outcome"] == "timeout"
    assert attempt["duration_ms"] < 4000


def test_worker_keeps_delivering_while_endpoints_misbehave(make, receiver_factory,
                                                           start_worker):
    bad = receiver_factory(lambda request: Reply(action="hang"))
    good = receiver_factory()
    make.config(endpoint=bad.url, event_types=["bad"])
    make.config(endpoint=good.url, event_types=["good"])
    for _ in range(5):
        make.event(type="bad")
    start_worker(dispatch_concurrency=10, http_timeout=10.0)
    gevent.sleep(0.3)
    for _ in range(20):
        make.event(type="good")
    good.wait_for(20, timeout=5)

"""HTTPS attempts verify certificates and host names with one TLS context loaded once."""

import contextlib
import ssl

import gevent.server
import pytest

from db.vocabulary import AttemptOutcome
from service.dispatch import transport
from service.dispatch.sender import Sender
from tests.catalogues.hostile_endpoints import read_request, self_signed
from tests.helpers import PATIENCE


@pytest.fixture
def certificate(tmp_path):
    """A certificate for 127.0.0.1, the address the endpoint is reached at."""
    return self_signed(tmp_path, "127.0.0.1", "IP:127.0.0.1")


@contextlib.contextmanager
def _serve(key, cert):
    """An HTTPS endpoint on 127.0.0.1 presenting `cert`; answers 200, closes each connection."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    connections = []

    def handle(sock, address):
        connections.append(address)
        # The whole request, body too: closing on an unread body resets the connection.
        head, _ = read_request(sock, b"")
        if head is None:
            return
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    server = gevent.server.StreamServer(("127.0.0.1", 0), handle, ssl_context=context)
    server.start()
    try:
        yield f"https://127.0.0.1:{server.server_port}/hook", connections
    finally:
        server.stop()


@pytest.fixture
def tls_endpoint(certificate):
    with _serve(*certificate) as endpoint:
        yield endpoint


def _trusting(cert):
    context = ssl.create_default_context(cafile=str(cert))
    return lambda: context


@pytest.mark.parametrize("allow_private", [True, False])
def test_new_https_connections_share_the_verifying_context(monkeypatch, certificate,
                                                            tls_endpoint, allow_private):
    _, cert = certificate
    url, connections = tls_endpoint
    monkeypatch.setattr(transport, "verifying_context", _trusting(cert))
    if not allow_private:  # the guard refuses 127.0.0.1; let this one address through
        monkeypatch.setattr(transport, "refusal", lambda host, addresses: None)
    sender = Sender(timeout=PATIENCE, concurrency=2, allow_private=allow_private)
    try:
        responses = [sender.post(url, b"{}", {"content-type": "application/json"})
                     for _ in range(3)]
        outcomes = [(r.outcome, r.status_code, r.excerpt) for r in responses]
        assert outcomes == [(AttemptOutcome.SUCCESS, 200, "ok")] * 3, responses[0].error
        assert len(connections) == 3  # a new TLS connection each time, all verified
        pools = sender.adapter.poolmanager.pools
        (key,) = pools.keys()
        pool = pools[key]
        assert pool.conn_kw["ssl_context"] is transport.verifying_context()
        assert pool.ca_certs is None and pool.ca_cert_dir is None  # no bundle re-read
    finally:
        sender.close()


def test_an_untrusted_certificate_is_still_refused(certificate, tls_endpoint):
    url, _ = tls_endpoint
    sender = Sender(timeout=PATIENCE, concurrency=2, allow_private=True)
    try:
        response = sender.post(url, b"{}", {})
    finally:
        sender.close()
    assert response.status_code == 0
    assert "CERTIFICATE_VERIFY_FAILED" in response.error


def test_a_trusted_certificate_for_another_host_is_refused(monkeypatch, tmp_path):
    """The endpoint's certificate is trusted but names example.com, not 127.0.0.1."""
    key, cert = self_signed(tmp_path, "example.com", "DNS:example.com")
    monkeypatch.setattr(transport, "verifying_context", _trusting(cert))
    sender = Sender(timeout=PATIENCE, concurrency=2, allow_private=True)
    try:
        with _serve(key, cert) as (url, _):
            response = sender.post(url, b"{}", {})
    finally:
        sender.close()
    assert response.status_code == 0 and "TLS error" in response.error
    assert "match" in response.error.lower() or "mismatch" in response.error.lower(), \
        response.error

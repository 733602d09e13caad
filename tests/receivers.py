"""Real HTTP endpoints on 127.0.0.1 for tests: a raw gevent StreamServer speaking HTTP/1.1.

Each receiver records every request it reads and answers with whatever its `respond`
callable returns for it, so a test can script 500s, Retry-After, slow or endless bodies,
resets and invalid HTTP. Sockets use TCP_NODELAY (Nagle plus delayed ACKs would stall each
keep-alive request).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import gevent
import gevent.event
import pytest
from gevent.server import StreamServer

from tests.catalogues import hostile_endpoints
from tests.helpers import PATIENCE, our_greenlets


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    """How to answer one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0  # seconds before answering
    action: str = "reply"  # reply | reset | close | raw, or one of the hostile endpoints
    #                        (tests/catalogues/hostile_endpoints.py): hang | endless_body |
    #                        slow_body | huge_length | endless_headers | long_header
    raw: bytes = b""  # sent verbatim when action is "raw"


Responder = Callable[[Request], Reply]

MAX_HEADER_BYTES = 64 * 1024


class Receiver:
    """One HTTP endpoint on 127.0.0.1 with a scripted answer per request."""

    def __init__(self, respond: Responder | None = None) -> None:
        self.respond: Responder = respond or (lambda request: Reply())
        self.requests: list[Request] = []
        self.connections = 0
        self.closed = 0  # connections this side has closed
        self._arrived = gevent.event.Event()
        self._server = StreamServer(("127.0.0.1", 0), self._handle)
        self._server.start()

    @property
    def port(self) -> int:
        return self._server.server_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def wait_for(self, count: int, timeout: float = PATIENCE) -> list[Request]:
        """Block until `count` requests arrived; fail the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}\n"
                                     + our_greenlets())
            self._arrived.wait(0.05)
            self._arrived.clear()
        return self.requests[:count]

    def stop(self) -> None:
        self._server.stop(timeout=0)

    def _handle(self, sock: socket.socket, address: tuple) -> None:
        self.connections += 1
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = sock.makefile("rb")
        try:
            while True:
                request = _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                self._arrived.set()
                reply = self.respond(request)
                if reply.delay:
                    gevent.sleep(reply.delay)
                if not _send(sock, reply):
                    return
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            sock.close()
            self.closed += 1


def _read_request(reader) -> Request | None:
    line = reader.readline(MAX_HEADER_BYTES)
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        line = reader.readline(MAX_HEADER_BYTES)
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = reader.read(length) if length else b""
    return Request(method, path, headers, body)


def _send(sock: socket.socket, reply: Reply) -> bool:
    """Answer one request; return False when the connection must end."""
    if reply.action == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        return False
    if reply.action == "close":
        return False
    if reply.action == "raw":
        sock.sendall(reply.raw)
        return False
    headers = dict(reply.headers)
    if reply.action == "slow_body":
        hostile_endpoints.slow_body(sock, reply.status, headers, reply.body)
        return True
    if reply.action in ("huge_length", "endless_body"):
        getattr(hostile_endpoints, reply.action)(sock, reply.status, headers)
        return False
    if reply.action in ("hang", "endless_headers", "long_header"):
        getattr(hostile_endpoints, reply.action)(sock)
        return False
    headers.setdefault("Content-Length", str(len(reply.body)))
    sock.sendall(hostile_endpoints.head(reply.status, headers) + reply.body)
    return True


@pytest.fixture
def receiver_factory() -> Iterator[Callable[..., Receiver]]:
    """Start receivers on free ports; all stop when the test ends."""
    started: list[Receiver] = []

    def start(respond: Responder | None = None) -> Receiver:
        receiver = Receiver(respond)
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


@pytest.fixture
def receiver(receiver_factory) -> Receiver:
    """One receiver that answers 200 to everything."""
    return receiver_factory()

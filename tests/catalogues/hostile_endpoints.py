"""Hostile webhook endpoints: what each does to a sender, and what the sender must record.

The answers (`endless_body`, `huge_length`, ...) write to an accepted socket; the scripted
receivers of the tests (tests/receivers.py) and the `hostile` chaos scenario
(tests/reliability/attacks.py) both use them. KINDS says, for each endpoint of the scenario, what
every attempt must record. `HostileEndpoints` serves every kind on 127.0.0.1, one port each.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gevent
from gevent.server import StreamServer

TEN_GB = 10 * 1024**3
STALL = 3600.0  # seconds a hanging answer waits: always past any client's timeout
SLOW_STEP = 0.5  # seconds between two bytes of a slow body
CHUNK = b"x" * 65536
MAX_HEAD = 64 * 1024  # bytes of request head read before the connection is dropped
INVALID_HTTP = b"\x16\x03\x01\x02\x00this is not HTTP\r\n\r\n"


def head(status: int, headers: dict[str, str]) -> bytes:
    """Return a response's status line and headers, ending with the blank line."""
    lines = [f"HTTP/1.1 {status} Status{status}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def endless_body(sock: socket.socket, status: int = 200, headers: dict | None = None) -> None:
    """Announce 10 GB and send it, as fast as the client reads."""
    sock.sendall(head(status, {**(headers or {}), "Content-Length": str(TEN_GB)}))
    while True:
        sock.sendall(CHUNK)


def huge_length(sock: socket.socket, status: int = 200, headers: dict | None = None) -> None:
    """Announce 10 GB, send 1 KiB, then nothing."""
    sock.sendall(head(status, {**(headers or {}), "Content-Length": str(TEN_GB)}) + b"x" * 1024)
    gevent.sleep(STALL)


def endless_headers(sock: socket.socket) -> None:
    """Send header lines forever (a hundred per write: the endpoint must not hog its CPU)."""
    sock.sendall(b"HTTP/1.1 200 OK\r\n")
    while True:
        sock.sendall((b"X-Padding: " + b"y" * 100 + b"\r\n") * 100)


def long_header(sock: socket.socket) -> None:
    """Send one header line that never ends."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nX-Long: ")
    while True:
        sock.sendall(CHUNK)


def slow_body(sock: socket.socket, status: int = 200, headers: dict | None = None,
              body: bytes = b"x" * 200, step: float = SLOW_STEP) -> None:
    """Announce `body`, then send one byte every `step` seconds."""
    sock.sendall(head(status, {**(headers or {}), "Content-Length": str(len(body))}))
    for byte in body:
        sock.sendall(bytes([byte]))
        gevent.sleep(step)


def hang(sock: socket.socket) -> None:
    """Read the request and never answer."""
    gevent.sleep(STALL)


def self_signed(directory: Path, name: str = "127.0.0.1",
                alt_name: str | None = None) -> tuple[Path, Path]:
    """Write a key and a self-signed certificate for `name` (and `alt_name`, e.g.
    `IP:127.0.0.1`) into `directory`; return their paths (key, certificate)."""
    key, cert = directory / f"{name}-key.pem", directory / f"{name}.pem"
    extra = ["-addext", f"subjectAltName={alt_name}"] if alt_name else []
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", f"/CN={name}",
                    *extra], check=True, capture_output=True)
    return key, cert


def self_signed_context(directory: Path) -> ssl.SSLContext:
    """Return a server TLS context with a certificate for 127.0.0.1 that nobody trusts."""
    key, cert = self_signed(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@dataclass(frozen=True)
class Kind:
    """One hostile endpoint of the scenario and what a delivery to it must record."""

    name: str
    outcome: str  # every attempt's outcome
    error: str | None  # in every failed attempt's error and the failed delivery's last_error
    status: str  # the delivery's end: `failed` (budget spent or permanent) or `succeeded`
    scheme: str = "http"
    status_code: int = 0  # every attempt's HTTP status


KINDS = (
    Kind("endless_body", "success", None, "succeeded", status_code=200),
    Kind("huge_length", "timeout", "timed out after", "failed"),
    Kind("endless_headers", "network_error", "got more than 100 headers", "failed"),
    Kind("long_header", "network_error", "got more than 65536 bytes", "failed"),
    Kind("invalid_http", "network_error", "BadStatusLine", "failed"),
    Kind("slow_body", "timeout", "timed out after", "failed"),
    Kind("hang", "timeout", "timed out after", "failed"),
    Kind("never_accepts", "timeout", "timed out after", "failed"),
    Kind("redirect_internal", "http_error", "redirects are not followed", "failed",
         status_code=302),
    Kind("tls_plain_http", "network_error", "TLS error", "failed", scheme="https"),
    Kind("tls_untrusted", "network_error", "TLS error: [SSL: CERTIFICATE_VERIFY_FAILED]", "failed",
         scheme="https"),
)


class HostileEndpoints:
    """Every kind of KINDS on a port of its own, plus the internal target redirects point to.

    `connections` counts the connections each one accepted; the internal target must see none.
    """

    def __init__(self, workdir: Path) -> None:
        self.connections: Counter = Counter()
        self._servers: dict[str, StreamServer] = {}
        self._listener: socket.socket | None = None
        self._tls = self_signed_context(workdir)

    def start(self) -> None:
        # Complete answers say `Connection: close`: the handler closes the connection after
        # one answer, and a client must not send its next request on it
        done = {"Content-Length": "0", "Connection": "close"}
        self._serve("internal", self._answer(lambda sock: sock.sendall(head(200, done))))
        internal = f"http://127.0.0.1:{self.port('internal')}/internal"
        answers: dict[str, Callable[[socket.socket], None]] = {
            "endless_body": endless_body, "huge_length": huge_length,
            "endless_headers": endless_headers, "long_header": long_header,
            "invalid_http": lambda sock: sock.sendall(INVALID_HTTP),
            "slow_body": slow_body, "hang": hang,
            "redirect_internal": lambda sock: sock.sendall(
                head(302, {"Location": internal, **done})),
        }
        for name, answer in answers.items():
            self._serve(name, self._answer(answer))
        # Answers in clear text as soon as anything arrives (a TLS hello), as nginx does
        self._serve("tls_plain_http",
                    self._answer(lambda sock: sock.sendall(head(400, done)), read=False))
        self._serve("tls_untrusted", self._handshake)
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(0)  # accepts nothing: connections pile up in the backlog

    def stop(self) -> None:
        for server in self._servers.values():
            server.stop(timeout=0)
        if self._listener is not None:
            self._listener.close()

    def port(self, name: str) -> int:
        if name == "never_accepts":
            return self._listener.getsockname()[1]
        return self._servers[name].server_port

    def url(self, kind: Kind) -> str:
        return f"{kind.scheme}://127.0.0.1:{self.port(kind.name)}/{kind.name}"

    def _serve(self, name: str, handle: Callable[[socket.socket, str], None]) -> None:
        def counted(sock: socket.socket, address) -> None:
            self.connections[name] += 1
            handle(sock, name)

        server = StreamServer(("127.0.0.1", 0), counted, backlog=1024)
        server.start()
        self._servers[name] = server

    @staticmethod
    def _answer(answer: Callable[[socket.socket], None], *,
                read: bool = True) -> Callable[[socket.socket, str], None]:
        """Return a handler that reads the request (unless not `read`) and answers it."""
        def handle(sock: socket.socket, name: str) -> None:
            try:
                if not read or read_request(sock, b"")[0] is not None:
                    answer(sock)
            except OSError:
                pass  # the client gave up: what every hostile answer is waiting for
            finally:
                sock.close()

        return handle

    def _handshake(self, sock: socket.socket, name: str) -> None:
        try:
            with self._tls.wrap_socket(sock, server_side=True) as tls:
                read_request(tls, b"")
        except (OSError, ssl.SSLError):
            pass  # the client refuses the certificate: what this endpoint is for
        finally:
            sock.close()


def read_request(sock: socket.socket, buffer: bytes) -> tuple[bytes | None, bytes]:
    """Read one request; return its head (None when the client hung up) and what follows."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk or len(buffer) > MAX_HEAD:
            return None, b""
        buffer += chunk
    request_head, _, buffer = buffer.partition(b"\r\n\r\n")
    length = int(request_headers(request_head).get("content-length", "0"))
    while len(buffer) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buffer += chunk
    return request_head, buffer[length:]


def request_headers(request_head: bytes) -> dict[str, str]:
    """Return the headers of a request head, names lower-cased."""
    headers = {}
    for line in request_head.split(b"\r\n")[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers

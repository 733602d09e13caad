"""POST one signed request with `requests`, bounded in time and memory, and say what happened.

One pooled connection adapter per process; redirects are not followed; at most 64 KiB of the body is
read; the whole attempt (connect, headers, body) is bounded by the timeout. Unless private
endpoints are allowed, each new connection resolves the host, refuses it when any address is
not public (SSRF guard), and connects to the address it checked, so DNS rebinding cannot
slip a private address in between the check and the connection.
"""

from __future__ import annotations

import functools
import re
import socket
import ssl
import time
from dataclasses import dataclass

import gevent
import requests
import urllib3.connection
import urllib3.connectionpool
from requests.adapters import HTTPAdapter
from requests.utils import DEFAULT_CA_BUNDLE_PATH
from urllib3.exceptions import NewConnectionError
from urllib3.util.ssl_ import create_urllib3_context

from service.policy import safe_text
from service.policy.ssrf import refusal

EXCERPT_LIMIT = 64 * 1024  # bytes of the response body read and kept
ERROR_LIMIT = 1000  # bytes of an error message kept
READ_CHUNK = 16 * 1024
# urllib3 prefixes connection errors with the connection object's repr; the message is enough
_CONNECTION_PREFIX = re.compile(r"^\w*(?:HTTPS?)?Connection\w*\(host=[^)]*\): ")
SUCCESS, HTTP_ERROR, TIMEOUT, NETWORK_ERROR, BLOCKED = (
    "success", "http_error", "timeout", "network_error", "blocked",
)
INTERRUPTED = "interrupted"  # not a POST's own outcome: the worker stopped before the answer


class BlockedDestination(Exception):
    """The endpoint resolves to an address webhooks may not be sent to."""


@dataclass(frozen=True)
class Response:
    """What one POST did: status 0 when no response arrived."""

    outcome: str
    status_code: int
    duration: float
    excerpt: str | None = None
    error: str | None = None
    retry_after: str | None = None


class _GuardedConnectionMixin:
    def _new_conn(self) -> socket.socket:
        host, port = self._dns_host, self.port
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise NewConnectionError(self, f"cannot resolve {host}: {error}") from error
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        reason = refusal(host, addresses)
        if reason:
            raise BlockedDestination(reason)
        last_error: OSError | None = None
        for address in addresses:
            try:
                return urllib3.util.connection.create_connection(
                    (address, port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except OSError as error:
                last_error = error
        raise NewConnectionError(self, f"cannot connect to {host}: {last_error}")


class _GuardedHTTPConnection(_GuardedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _GuardedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


@functools.cache
def verifying_context() -> ssl.SSLContext:
    """The TLS context of every HTTPS attempt: `requests`' CA bundle, loaded once."""
    context = create_urllib3_context()
    context.load_verify_locations(DEFAULT_CA_BUNDLE_PATH)
    return context


class _Adapter(HTTPAdapter):
    """An adapter whose HTTPS connections share one verifying TLS context.

    `requests` points each pool at the CA bundle file, and urllib3 then builds a context and
    parses the bundle for every new connection: ≈ 13 ms of CPU that blocks the event loop,
    capping new HTTPS connections near 75/s per process. Certificates and host names are
    verified exactly as before; only the loading is shared.
    """

    def init_poolmanager(self, *args, **kwargs) -> None:
        kwargs["ssl_context"] = verifying_context()
        super().init_poolmanager(*args, **kwargs)

    def cert_verify(self, conn, url, verify, cert) -> None:
        super().cert_verify(conn, url, verify, cert)
        conn.ca_certs = conn.ca_cert_dir = None  # the shared context holds them


class _GuardedAdapter(_Adapter):
    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool,
                                                   "https": _GuardedHTTPSPool}


class Sender:
    """Send POSTs through one pooled `requests` adapter sized to the dispatch concurrency.

    Prepared requests go straight to the adapter: a Session would add per-request work
    (settings merging, hooks, environment lookups) and a cookie jar shared by every
    customer's endpoint, none of which a webhook needs.
    """

    def __init__(self, *, timeout: float, concurrency: int, allow_private: bool) -> None:
        self.timeout = timeout
        adapter_class = _Adapter if allow_private else _GuardedAdapter
        self.adapter = adapter_class(
            pool_connections=concurrency, pool_maxsize=concurrency, max_retries=0)

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> Response:
        """POST `body` to `url`; never raises for anything the endpoint or network does."""
        started = time.monotonic()
        timer = gevent.Timeout(self.timeout)
        timer.start()
        try:
            return self._post(url, body, headers, started)
        except gevent.Timeout as expired:
            if expired is not timer:
                raise
            return self._failed(TIMEOUT, started, f"timed out after {self.timeout:g}s")
        except BlockedDestination as error:
            return self._failed(BLOCKED, started, f"blocked: {error}")
        except requests.exceptions.Timeout:
            return self._failed(TIMEOUT, started, f"timed out after {self.timeout:g}s")
        except requests.exceptions.SSLError as error:
            return self._failed(NETWORK_ERROR, started, f"TLS error: {_reason(error)}")
        except requests.exceptions.RequestException as error:
            return self._failed(NETWORK_ERROR, started, _reason(error))
        except Exception as error:  # a hostile endpoint must never crash the worker
            return self._failed(NETWORK_ERROR, started, f"{type(error).__name__}: {error}")
        finally:
            timer.close()

    def close(self) -> None:
        self.adapter.close()

    def _post(self, url: str, body: bytes, headers: dict[str, str], started: float) -> Response:
        request = requests.PreparedRequest()
        request.method = "POST"
        request.url = _prepared_url(url)
        request.prepare_headers(headers)  # refuses header values that could inject lines
        request.headers["Content-Length"] = str(len(body))
        request.body = body
        response = self.adapter.send(request, stream=True, timeout=self.timeout)
        try:
            excerpt = _read_excerpt(response)
        finally:
            response.close()
        code = response.status_code
        return Response(
            outcome=SUCCESS if 200 <= code < 300 else HTTP_ERROR,
            status_code=code,
            duration=time.monotonic() - started,
            excerpt=excerpt,
            retry_after=response.headers.get("Retry-After"),
        )

    @staticmethod
    def _failed(outcome: str, started: float, error: str) -> Response:
        return Response(outcome, 0, time.monotonic() - started,
                        error=safe_text.from_text(error, ERROR_LIMIT))


@functools.lru_cache(maxsize=4096)
def _prepared_url(url: str) -> str:
    """Return `url` as requests sends it (IDNA host, percent-encoding); endpoints repeat."""
    request = requests.PreparedRequest()
    request.prepare_url(url, None)
    return request.url


def _read_excerpt(response: requests.Response) -> str:
    """Read at most EXCERPT_LIMIT bytes as storable text; a longer body is closed, not drained."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.raw.stream(READ_CHUNK, decode_content=False):
        chunks.append(chunk)
        size += len(chunk)
        if size >= EXCERPT_LIMIT:
            break
    return safe_text.from_bytes(b"".join(chunks), EXCERPT_LIMIT)


def _reason(error: Exception) -> str:
    """Return the innermost useful message of a requests/urllib3 error chain."""
    message = str(error)
    inner = error.args[0] if error.args else None
    reason = getattr(inner, "reason", None)
    if reason is not None:
        message = str(reason)
    return _CONNECTION_PREFIX.sub("", message)

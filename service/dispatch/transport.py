"""The HTTP plumbing under the sender: a `requests` adapter over urllib3 pools, with its
per-request work cut to what a webhook needs.

- **SSRF guard** (GuardedAdapter, unless private endpoints are allowed): each new connection
  resolves the host, refuses it when any address is not public, and connects to the address
  it checked, so DNS rebinding cannot slip a private address in between the check and the
  connection.
- **One TLS context**: `requests` points each pool at the CA bundle file, and urllib3 then
  builds a context and parses the bundle for every new connection (≈ 13 ms of CPU that blocks
  the event loop, capping new HTTPS connections near 75/s per process). Every HTTPS
  connection shares one verifying context; certificates and host names are verified exactly
  as before.
- **Keep-alive checked by the kernel**: before reusing a pooled connection, urllib3 asks
  whether the peer closed it (or sent something unasked) with a zero-timeout poll. Under
  gevent that poll is the cooperative one, which starts watchers and switches to the event
  loop for every reuse; a zero timeout never blocks, so the check calls the kernel's poll.
- **No per-request work a webhook does not use**: the sender passes no proxies, verifies
  with the shared context and sends no client certificate, so a URL's pool key and request
  target depend on the URL alone and are worked out once per endpoint; the answer is handed
  back as status, headers and the unread body (`Answer`), without the cookie jar and text
  encoding of a `requests.Response`.
"""

from __future__ import annotations

import functools
import select
import socket
import ssl
from dataclasses import dataclass

import gevent.monkey
import requests
import urllib3.connection
import urllib3.connectionpool
from requests.adapters import HTTPAdapter
from requests.utils import DEFAULT_CA_BUNDLE_PATH
from urllib3 import BaseHTTPResponse, HTTPHeaderDict
from urllib3.exceptions import NewConnectionError
from urllib3.util.ssl_ import create_urllib3_context

from service.policy.ssrf import refusal

_kernel_poll = gevent.monkey.get_original("select", "poll")


class BlockedDestination(Exception):
    """The endpoint resolves to an address webhooks may not be sent to."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An endpoint's answer as the adapter hands it back: status and headers read, the body
    still unread in `raw`."""

    status_code: int
    headers: HTTPHeaderDict  # case-insensitive, as `requests` gives them
    raw: BaseHTTPResponse

    def close(self) -> None:
        """Close the body and give the connection back, as `requests.Response.close` does."""
        self.raw.close()
        self.raw.release_conn()


class _KeepAliveMixin:
    @property
    def is_connected(self) -> bool:
        """Whether a pooled connection may be reused: open, and nothing to read on it (a
        closed or chatty peer makes it readable)."""
        if self.sock is None:
            return False
        poller = _kernel_poll()
        poller.register(self.sock, select.POLLIN)
        return not poller.poll(0)


class _GuardedMixin:
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


class _HTTPConnection(_KeepAliveMixin, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_KeepAliveMixin, urllib3.connection.HTTPSConnection):
    pass


class _GuardedHTTPConnection(_GuardedMixin, _HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardedMixin, _HTTPSConnection):
    pass


def _pool_class(base: type, connection: type) -> type:
    return type(f"{connection.__name__.lstrip('_')}Pool", (base,), {"ConnectionCls": connection})


POOLS = {"http": _pool_class(urllib3.connectionpool.HTTPConnectionPool, _HTTPConnection),
         "https": _pool_class(urllib3.connectionpool.HTTPSConnectionPool, _HTTPSConnection)}
GUARDED_POOLS = {
    "http": _pool_class(urllib3.connectionpool.HTTPConnectionPool, _GuardedHTTPConnection),
    "https": _pool_class(urllib3.connectionpool.HTTPSConnectionPool, _GuardedHTTPSConnection),
}


@functools.cache
def verifying_context() -> ssl.SSLContext:
    """The TLS context of every HTTPS attempt: `requests`' CA bundle, loaded once."""
    context = create_urllib3_context()
    context.load_verify_locations(DEFAULT_CA_BUNDLE_PATH)
    return context


class Adapter(HTTPAdapter):
    """The adapter of a worker that may send to private addresses (no SSRF guard)."""

    pools = POOLS

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pool_keys = functools.lru_cache(maxsize=4096)(self._pool_key)

    def init_poolmanager(self, *args, **kwargs) -> None:
        kwargs["ssl_context"] = verifying_context()
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(self.pools)

    def cert_verify(self, conn, url, verify, cert) -> None:
        super().cert_verify(conn, url, verify, cert)
        conn.ca_certs = conn.ca_cert_dir = None  # the shared context holds them

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        if proxies:
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        try:
            host_params, pool_kwargs = self.build_connection_pool_key_attributes(
                request, verify, cert)
        except ValueError as error:
            raise requests.exceptions.InvalidURL(error, request=request) from error
        return self.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = self._pool_keys(request.url, verify, cert)
        return dict(host_params), dict(pool_kwargs)

    def _pool_key(self, url: str, verify, cert) -> tuple[dict, dict]:
        return super().build_connection_pool_key_attributes(_bare_request(url), verify, cert)

    def request_url(self, request, proxies) -> str:
        if proxies:
            return super().request_url(request, proxies)
        return _request_target(request.url)

    def build_response(self, req, resp) -> Answer:
        return Answer(resp.status, resp.headers, resp)


class GuardedAdapter(Adapter):
    """The adapter of a worker that sends to public addresses only (the default)."""

    pools = GUARDED_POOLS


def _bare_request(url: str) -> requests.PreparedRequest:
    request = requests.PreparedRequest()
    request.url = url
    return request


@functools.lru_cache(maxsize=4096)
def _request_target(url: str) -> str:
    """Return the path and query that a request to the prepared `url` asks for."""
    return _bare_request(url).path_url

"""POST one signed request with `requests`, bounded in time and memory, and say what happened.

One pooled connection adapter per process (service.dispatch.transport: the SSRF guard, the
shared TLS context, keep-alive); redirects are not followed; at most 64 KiB of the body is
read; the whole attempt (connect, headers, body) is bounded by the timeout.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass

import gevent
import requests

from db.vocabulary import AttemptOutcome
from service.dispatch import transport
from service.policy import safe_text
from service.policy.classify import answer_outcome

EXCERPT_LIMIT = 64 * 1024  # bytes of the response body read and kept
ERROR_LIMIT = 1000  # bytes of an error message kept
READ_CHUNK = 16 * 1024
# urllib3 prefixes connection errors with the connection object's repr; the message is enough
_CONNECTION_PREFIX = re.compile(r"^\w*(?:HTTPS?)?Connection\w*\(host=[^)]*\): ")


@dataclass(frozen=True)
class Response:
    """What one POST did: status 0 when no response arrived."""

    outcome: AttemptOutcome
    status_code: int
    duration: float
    excerpt: str | None = None
    error: str | None = None
    retry_after: str | None = None


class Sender:
    """Send POSTs through one pooled `requests` adapter sized to the dispatch concurrency.

    Prepared requests go straight to the adapter: a Session would add per-request work
    (settings merging, hooks, environment lookups) and a cookie jar shared by every
    customer's endpoint, none of which a webhook needs.
    """

    def __init__(self, *, timeout: float, concurrency: int, allow_private: bool) -> None:
        self.timeout = timeout
        adapter_class = transport.Adapter if allow_private else transport.GuardedAdapter
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
            return self._failed(AttemptOutcome.TIMEOUT, started, self._timed_out())
        except transport.BlockedDestination as error:
            return self._failed(AttemptOutcome.BLOCKED, started, f"blocked: {error}")
        except requests.exceptions.Timeout:
            return self._failed(AttemptOutcome.TIMEOUT, started, self._timed_out())
        except requests.exceptions.SSLError as error:
            return self._failed(AttemptOutcome.NETWORK_ERROR, started,
                                f"TLS error: {_reason(error)}")
        except requests.exceptions.RequestException as error:
            return self._failed(AttemptOutcome.NETWORK_ERROR, started, _reason(error))
        except Exception as error:  # a hostile endpoint must never crash the worker
            return self._failed(AttemptOutcome.NETWORK_ERROR, started,
                                f"{type(error).__name__}: {error}")
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
            outcome=answer_outcome(code),
            status_code=code,
            duration=time.monotonic() - started,
            excerpt=excerpt,
            retry_after=response.headers.get("Retry-After"),
        )

    def _timed_out(self) -> str:
        return f"timed out after {self.timeout:g}s"

    @staticmethod
    def _failed(outcome: AttemptOutcome, started: float, error: str) -> Response:
        return Response(outcome, 0, time.monotonic() - started,
                        error=safe_text.from_text(error, ERROR_LIMIT))


@functools.lru_cache(maxsize=4096)
def _prepared_url(url: str) -> str:
    """Return `url` as requests sends it (IDNA host, percent-encoding); endpoints repeat."""
    request = requests.PreparedRequest()
    request.prepare_url(url, None)
    return request.url


def _read_excerpt(response: transport.Answer) -> str:
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
    elif isinstance(inner, Exception) and len(inner.args) == 2 \
            and isinstance(inner.args[1], Exception):
        # urllib3's ProtocolError('Connection aborted.', ConnectionResetError(104, '…')):
        # in words, not as the tuple's repr.
        cause = inner.args[1]
        said = getattr(cause, "strerror", None) or f"{type(cause).__name__}: {cause}"
        message = f"{str(inner.args[0]).rstrip('.')}: {said}"
    return _CONNECTION_PREFIX.sub("", message)

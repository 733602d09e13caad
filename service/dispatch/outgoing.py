"""Build the signed request of one attempt: the JSON body, the Standard Webhooks headers, and
the trace context and span attributes of the attempt."""

from __future__ import annotations

import time
import urllib.parse

from db import webhook_body
from db.deliveries import Claimed
from service import __version__
from service.policy.signing import headers as signature_headers
from service.policy.trace_context import TraceContext

USER_AGENT = f"webhooks/{__version__}"
# Headers every request carries with the same value: an attempt's record leaves them out.
CONSTANT_HEADERS = {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "Accept-Encoding": "identity",
}


def body(claimed: Claimed) -> bytes:
    """Return the JSON body of an attempt (db/webhook_body.py)."""
    return webhook_body.body(claimed.event_id, claimed.event_type, claimed.occurred_at,
                             claimed.payload)


def headers(claimed: Claimed, payload: bytes, *, now: float | None = None) -> dict[str, str]:
    """Return the HTTP headers of an attempt, signed with every secret valid now."""
    timestamp = int(time.time() if now is None else now)
    secrets = [claimed.secret, *claimed.previous_secrets]
    sent = {
        **CONSTANT_HEADERS,
        **signature_headers(secrets, claimed.webhook_id, timestamp, payload),
        "webhook-attempt": str(claimed.attempt_count + 1),
        "webhook-replay-generation": str(claimed.replay_generation),
    }
    if claimed.sequence is not None and claimed.ordering_key is not None:
        sent["webhook-ordering-key"] = header_text(claimed.ordering_key)
        sent["webhook-sequence"] = str(claimed.sequence)
    if claimed.deprecated:
        sent["webhook-deprecated"] = "true"  # its type is deprecated in the catalog
    return sent


def header_text(text: str) -> str:
    """Return `text` as an HTTP header value: printable ASCII as it is, every other byte of
    its UTF-8 (and `%`) percent-encoded, as a URL's path is."""
    return urllib.parse.quote(text, safe=HEADER_SAFE)


# Printable ASCII but `%` (the escape itself): kept as it is in an ordering key's header.
HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


# Headers whose value the attempt's own row already holds (its delivery's webhook id, its
# attempt number and generation): not stored again; the API puts them back.
ROW_HEADERS = ("webhook-id", "webhook-attempt", "webhook-replay-generation")


def recorded(sent: dict[str, str]) -> dict[str, str]:
    """Return the headers of a request as its attempt keeps them: those no other column
    holds (timestamp, signatures, trace context), about 160 bytes."""
    return {name: value for name, value in sent.items()
            if name not in CONSTANT_HEADERS and name not in ROW_HEADERS}


def trace_parent(claimed: Claimed) -> TraceContext | None:
    """Return the producer's trace context stored with the event, if it sent one."""
    if claimed.trace_parent is None:
        return None
    return TraceContext(claimed.trace_parent, claimed.trace_state)


def span_attributes(claimed: Claimed) -> dict[str, str | int]:
    """The attempt span's attributes; an event from Kafka adds OpenTelemetry's messaging
    ones (the attempt processes that message)."""
    attributes: dict[str, str | int] = {
        "webhooks.delivery_id": claimed.id,
        "webhooks.event_id": claimed.event_id,
        "webhooks.config_id": claimed.config_id,
        "webhooks.attempt": claimed.attempt_count + 1,
        "http.request.method": "POST",
    }
    if claimed.source == "kafka":
        attributes |= {"messaging.system": "kafka", "messaging.operation.type": "process",
                       "messaging.message.id": claimed.event_id}
        if claimed.message_key is not None:
            key = bytes(claimed.message_key).decode("utf-8", errors="replace")
            attributes["messaging.kafka.message.key"] = key
    return attributes

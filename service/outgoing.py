"""Build the signed request of one attempt: the JSON body and the Standard Webhooks headers."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from db.deliveries import Claimed
from service import __version__
from service.signing import headers as signature_headers

USER_AGENT = f"webhooks/{__version__}"


def body(claimed: Claimed) -> bytes:
    """Return `{"id", "type", "timestamp", "data"}` with the stored payload text spliced in."""
    return (
        '{"id":' + json.dumps(claimed.event_id)
        + ',"type":' + json.dumps(claimed.event_type)
        + ',"timestamp":"' + rfc3339(claimed.occurred_at)
        + '","data":' + claimed.payload + "}"
    ).encode()


def headers(claimed: Claimed, payload: bytes, *, now: float | None = None) -> dict[str, str]:
    """Return the HTTP headers of an attempt, signed with every secret valid now."""
    timestamp = int(time.time() if now is None else now)
    secrets = [claimed.secret, *claimed.previous_secrets]
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",
        **signature_headers(secrets, str(claimed.id), timestamp, payload),
        "webhook-attempt": str(claimed.attempt_count + 1),
        "webhook-replay-generation": str(claimed.replay_generation),
    }


def rfc3339(moment: datetime) -> str:
    """Return `moment` in UTC as RFC 3339 with millisecond precision and a `Z`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""The JSON body every attempt of a delivery sends, built from its stored event: the worker
sends it, and the API shows it byte for byte."""

from __future__ import annotations

import json
from datetime import UTC, datetime


def body(event_id: str, event_type: str, occurred_at: datetime, payload_text: str) -> bytes:
    """Return `{"id", "type", "timestamp", "data"}` with the stored payload text spliced in."""
    return (
        '{"id":' + json.dumps(event_id)
        + ',"type":' + json.dumps(event_type)
        + ',"timestamp":"' + rfc3339(occurred_at)
        + '","data":' + payload_text + "}"
    ).encode()


def rfc3339(moment: datetime) -> str:
    """Return `moment` in UTC as RFC 3339 with millisecond precision and a `Z`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""W3C trace context carried by broker messages: read it, validate it, continue it.

Pure: no clock, network or database. A producer instrumented with OpenTelemetry puts its
span's context in the record headers `traceparent` and `tracestate`; the event keeps them,
and every attempt to deliver it becomes a child of that span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
MAX_TRACESTATE = 512  # characters kept at most; W3C lets a vendor drop a longer one
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
_TRACESTATE = re.compile(r"^[\x20-\x7e]*$")


@dataclass(frozen=True)
class TraceContext:
    """A valid `traceparent` and the `tracestate` that came with it (or None)."""

    parent: str
    state: str | None = None

    @property
    def trace_id(self) -> str:
        return self.parent[3:35]

    @property
    def flags(self) -> str:
        return self.parent[53:55]


def parse_traceparent(value: str | None) -> str | None:
    """Return `value` when it is a valid W3C traceparent, else None."""
    if value is None:
        return None
    match = _TRACEPARENT.match(value.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    if version == "00" and rest:
        return None  # version 00 has exactly four fields
    return f"00-{trace_id}-{span_id}-{flags}"


def from_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> TraceContext | None:
    """Return the trace context of a message's headers, or None when it has no valid one.

    Header names match case-insensitively; two `traceparent` headers make neither valid.
    A `tracestate` is kept only beside a valid `traceparent`, and only when printable ASCII
    of at most MAX_TRACESTATE characters.
    """
    parents: list[bytes | None] = []
    states: list[bytes | None] = []
    for name, value in headers or ():
        lowered = name.lower() if isinstance(name, str) else ""
        if lowered == TRACEPARENT:
            parents.append(value)
        elif lowered == TRACESTATE:
            states.append(value)
    if len(parents) != 1:
        return None
    parent = parse_traceparent(_text(parents[0]))
    if parent is None:
        return None
    state = ",".join(text for text in map(_text, states) if text)  # W3C: repeats join
    if not state or len(state) > MAX_TRACESTATE or not _TRACESTATE.match(state):
        return TraceContext(parent)
    return TraceContext(parent, state.strip())


def child_traceparent(context: TraceContext, span_id: int) -> str:
    """Return the traceparent of a child span `span_id` in `context`'s trace."""
    return f"00-{context.trace_id}-{span_id:016x}-{context.flags}"


def _text(value: bytes | None) -> str | None:
    if value is None:
        return None
    try:
        return value.decode("ascii")
    except (UnicodeDecodeError, AttributeError):
        return None

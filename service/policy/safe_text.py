"""Turn whatever an endpoint sends into text PostgreSQL can store, within a size limit.

A `text` column takes neither NUL nor invalid UTF-8, and an endpoint controls every byte of
its body, headers, reason phrase and the messages its misbehaviour produces. NUL and
undecodable bytes become the four characters `\\xNN`; the result's UTF-8 form is at most
`limit` bytes and never ends inside such an escape or a multi-byte character.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\x[0-9a-f]{2}")
_ESCAPE_LENGTH = 4


def from_bytes(data: bytes, limit: int) -> str:
    """Return `data` as UTF-8 text, NUL and undecodable bytes escaped, in `limit` bytes."""
    text = data.decode("utf-8", "backslashreplace").replace("\x00", "\\x00")
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    cut = encoded[:limit].decode("utf-8", "ignore")
    start = cut.rfind("\\", max(0, len(cut) - _ESCAPE_LENGTH + 1))
    if start >= 0 and _ESCAPE.match(text, start) and start + _ESCAPE_LENGTH > len(cut):
        cut = cut[:start]
    return cut


def from_text(text: str, limit: int) -> str:
    """Return `text` storable: NUL and lone surrogates escaped, in `limit` UTF-8 bytes."""
    return from_bytes(text.encode("utf-8", "backslashreplace"), limit)

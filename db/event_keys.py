"""The ordering key an event's key gives: its text when that can be stored and shown as it is,
else an encoded form, so that every key can order its events and two distinct keys never
share one order.

Pure: the Kafka consumer applies it to a message key's bytes, publishEvent to the UTF-8 of its
`orderingKey`, so the same key orders alike through either.

- A key that is UTF-8 text of at most MAX_ORDERING_KEY_LENGTH characters, without NUL, and
  not starting with one of the two prefixes below, is its own ordering key.
- Any other key of at most ENCODED_BYTES bytes (binary, holding NUL, such as a schema
  registry's framed key, or text that starts with a prefix) is `~b64:` and the standard
  base64 of its bytes (what the API shows as `eventKey`).
- A longer one is `~sha256:` and the lowercase hex SHA-256 of its bytes.

The prefixes keep the three forms apart: distinct keys give distinct ordering keys (for the
digests, as far as SHA-256 has no collisions), and the same key always gives the same one.
"""

from __future__ import annotations

import base64
import hashlib

from db.errors import InvalidInput

MAX_ORDERING_KEY_LENGTH = 255  # characters of an ordering key, encoded forms included
ENCODED_PREFIX = "~b64:"
DIGEST_PREFIX = "~sha256:"
# Bytes of the longest key kept as base64 within MAX_ORDERING_KEY_LENGTH (186).
ENCODED_BYTES = (MAX_ORDERING_KEY_LENGTH - len(ENCODED_PREFIX)) // 4 * 3


def ordering_key(key: bytes | None) -> str | None:
    """Return the ordering key of an event's key; None without one (empty is none)."""
    if not key:
        return None
    text = _as_text(key)
    if text is not None:
        return text
    if len(key) <= ENCODED_BYTES:
        return ENCODED_PREFIX + base64.b64encode(key).decode("ascii")
    return DIGEST_PREFIX + hashlib.sha256(key).hexdigest()


def given_ordering_key(text: str | None) -> str | None:
    """Return the ordering key of an API caller's `orderingKey`, or raise InvalidInput when
    it is not Unicode text (a lone surrogate has no UTF-8)."""
    if text is None:
        return None
    try:
        key = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("orderingKey: must be valid Unicode (no lone surrogates)") from None
    return ordering_key(key)


def _as_text(key: bytes) -> str | None:
    """Return `key` as text when it is its own ordering key, else None."""
    try:
        text = key.decode("utf-8")  # strict: refuses encoded surrogates too
    except UnicodeDecodeError:
        return None
    if (len(text) > MAX_ORDERING_KEY_LENGTH or "\x00" in text
            or text.startswith((ENCODED_PREFIX, DIGEST_PREFIX))):
        return None
    return text

"""Sign requests per Standard Webhooks (https://www.standardwebhooks.com/) and verify them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence

from db.vocabulary import SECRET_PREFIX  # constants only: signing stays free of the database


class VerificationError(Exception):
    """A request's webhook headers do not prove it came from the holder of a secret."""


def signing_key(secret: str) -> bytes:
    """Return the HMAC key of `secret`: its base64 payload, or its UTF-8 bytes if not base64."""
    text = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        key = secret.encode()
    if not key:
        raise ValueError("empty webhook secret")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the `v1,<base64 HMAC-SHA256>` signature of one message."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(signing_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_header(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the space-separated signatures of a message, one per distinct key, in order."""
    if not secrets:
        raise ValueError("no webhook secret to sign with")
    signatures = (sign(secret, msg_id, timestamp, body) for secret in secrets)
    return " ".join(dict.fromkeys(signatures))


def headers(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Return the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(secrets, msg_id, timestamp, body),
    }


def _header(lowered: Mapping[str, str], name: str) -> str:
    value = lowered.get(f"webhook-{name}") or lowered.get(f"svix-{name}")
    if not value:
        raise VerificationError(f"missing webhook-{name} header")
    return value


def verify(
    secrets: str | Sequence[str],
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance: float = 300,
    now: float | None = None,
) -> None:
    """Raise VerificationError unless `headers` sign `body` with one of `secrets`, recently."""
    if isinstance(secrets, str):
        secrets = [secrets]
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id = _header(lowered, "id")
    text = _header(lowered, "timestamp").strip()
    signatures = _header(lowered, "signature")
    if not (text.isascii() and text.isdigit() and len(text) <= 20):
        raise VerificationError(f"invalid webhook-timestamp {text[:40]!r}: not Unix seconds")
    timestamp = int(text)
    now = time.time() if now is None else now
    if timestamp < now - tolerance:
        raise VerificationError(f"webhook-timestamp {timestamp} is more than {tolerance:g}s old")
    if timestamp > now + tolerance:
        raise VerificationError(f"webhook-timestamp {timestamp} is more than {tolerance:g}s ahead")
    # Whole entries are compared, so entries of other versions than v1 never match.
    expected = [sign(secret, msg_id, timestamp, body).encode() for secret in secrets]
    given = [entry.encode() for entry in signatures.split()]
    if not any(hmac.compare_digest(g, e) for g in given for e in expected):
        raise VerificationError("no matching signature in webhook-signature")

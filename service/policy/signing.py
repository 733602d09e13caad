"""Sign requests per Standard Webhooks (https://www.standardwebhooks.com/)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

from db.vocabulary import SECRET_PREFIX  # constants only: signing stays free of the database


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

"""A receiver's check of our signatures, as the tests make it: several secrets at once (a
rotation's grace), a timestamp tolerance, and a clear reason when it fails. (Receivers use a
Standard Webhooks library; the tests check against one too.)"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping, Sequence

from service.policy.signing import sign


class VerificationError(Exception):
    """A request's webhook headers do not prove it came from the holder of a secret."""


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

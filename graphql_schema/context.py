"""What a resolver may use: given by the web app for each request, as plain values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import strawberry

from db.pool import ConnectionPool


class Telemetry(Protocol):
    """The metrics the API records (service/telemetry.Telemetry has these methods)."""

    def replayed(self, action: str) -> None: ...

    def transition(self, source: str, target: str, count: int = 1) -> None: ...


@dataclass(frozen=True)
class Context:
    """One request's view of the service: database, limits, caller and telemetry."""

    pool: ConnectionPool
    telemetry: Telemetry
    max_payload: int  # bytes of JSON an event payload may take
    secret_rotation_grace: float  # seconds a rotated-out secret keeps signing
    role: str | None = None  # "viewer", "operator", or None when not authenticated
    idempotency_key: str | None = None  # the request's Idempotency-Key header


Info = strawberry.Info[Context, Any]


def bearer_token(authorization: str | None) -> str | None:
    """Return the token of an `Authorization: Bearer <token>` header, or None."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token

"""What a resolver may use, as plain values: built for each operation by
service.runtime.api_context, for an HTTP request (the web app) or an on-call command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import strawberry

from db.pool import ConnectionPool
from db.scope import Scope
from db.vocabulary import PortalCapability


class Telemetry(Protocol):
    """The metrics the API records (service.runtime.telemetry.Telemetry has these methods)."""

    def replayed(self, action: str) -> None: ...

    def transition(self, source: str, target: str, count: int = 1) -> None: ...

    def circuit_transition(self, source: str, target: str) -> None: ...

    def ingested(self, source: str, count: int) -> None: ...

    def filtered_out(self, count: int) -> None: ...

    def api_request(self, operation: str, outcome: str, seconds: float) -> None: ...


@dataclass
class Observed:
    """What the schema saw of one request, for the API's metrics."""

    operation: str | None = None  # the first root field of the operation run
    codes: list[str] = field(default_factory=list)  # the codes of the errors returned


@dataclass(frozen=True)
class Context:
    """One request's view of the service: database, limits, caller and telemetry."""

    pool: ConnectionPool
    telemetry: Telemetry
    scope: Scope  # whose data the caller may see: its token's tenant's, or the platform's
    max_payload: int  # bytes of JSON an event payload may take
    secret_rotation_grace: float  # seconds a rotated-out secret keeps signing
    # Why webhooks could not be sent to an endpoint URL, or None; unset: private allowed.
    endpoint_refusal: Callable[[str], str | None] | None = None
    role: str | None = None  # "viewer", "operator", or None when not authenticated
    token_name: str | None = None  # the name of the caller's token (never the token)
    tenant_uid: str | None = None  # the tenant the caller's token acts for (None: platform)
    create_tenants_on_publish: bool = False  # a publish to an unknown uid creates the tenant
    strict_event_types: bool = False  # only the catalog's types, at publish and in subscriptions
    tenants_seen: dict = field(default_factory=dict)  # tenants looked up by this request, by id
    tenants_named: dict = field(default_factory=dict)  # the same, by uid
    endpoint_checks: dict = field(default_factory=dict)  # endpoint_refusal's answers, by host
    # the tenants of the rows listed so far: the first one asked for loads them all at once
    tenants_listed: set = field(default_factory=set)
    # Reads a rejected broker message again as the consumer reads a message (or raises
    # InvalidInput saying why it still cannot be an event); unset: replays are unavailable.
    read_rejected: Callable[[Any], Any] | None = None
    idempotency_key: str | None = None  # the request's Idempotency-Key header
    # A portal session's limits: what it may do, and the subscriptions its endpoints may make
    # (None: any); None for an API token, whose role alone says what it may do.
    capabilities: frozenset[PortalCapability] | None = None
    allowed_event_types: tuple[str, ...] | None = None
    session_expires_at: datetime | None = None  # when the caller's portal session ends
    portal_url: str | None = None  # the address of the portal page, for the sessions minted
    observed: Observed = field(default_factory=Observed)


Info = strawberry.Info[Context, Any]


def bearer_token(authorization: str | None) -> str | None:
    """Return the token of an `Authorization: Bearer <token>` header, or None."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token

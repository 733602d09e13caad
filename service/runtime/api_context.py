"""The context every GraphQL operation runs in, built from the process's settings: the same
limits and checks whether the operation came over HTTP or from the command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from db.catalog import CatalogMode
from db.pool import ConnectionPool
from db.scope import Scope
from db.tokens import Principal
from graphql_schema.context import Context
from service.policy.ssrf import endpoint_refusal
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry


def api_context(pool: ConnectionPool, telemetry: Telemetry, settings: Settings, *,
                role: str | None, token_name: str | None, scope: Scope,
                tenant_uid: str | None, idempotency_key: str | None,
                read_rejected: Callable[..., Any] | None = None,
                principal: Principal | None = None, portal_url: str | None = None) -> Context:
    """Return the context of one operation by `role` (None: not authenticated): the payload
    limit, the secret rotation grace, and the check that refuses private endpoints unless the
    settings allow them; `scope` is whose data it may see (its token's tenant's, identified by
    `tenant_uid`, or the whole platform's); a portal session's `principal` adds its limits."""
    return Context(
        capabilities=principal.capabilities if principal else None,
        allowed_event_types=principal.event_types if principal else None,
        session_expires_at=principal.expires_at if principal else None,
        portal_url=portal_url,
        pool=pool,
        telemetry=telemetry,
        scope=scope,
        tenant_uid=tenant_uid,
        create_tenants_on_publish=settings.create_tenants_on_publish,
        strict_event_types=settings.event_types == CatalogMode.STRICT,
        read_rejected=read_rejected,
        max_payload=settings.max_payload,
        secret_rotation_grace=settings.secret_rotation_grace,
        endpoint_refusal=None if settings.allow_private_endpoints else endpoint_refusal,
        role=role,
        token_name=token_name,
        idempotency_key=idempotency_key,
    )

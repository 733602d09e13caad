"""Portal sessions through the API: a platform-wide operator token mints one for a tenant (its
self-service page's token and address) and revokes a tenant's; a session reads what it was
granted (`me { portal }`)."""

from __future__ import annotations

import urllib.parse
from datetime import datetime
from enum import StrEnum

import strawberry

from db import portal_sessions
from db.errors import NotFound
from db.vocabulary import PortalCapability as CapabilityWord
from graphql_schema import arguments, tenancy
from graphql_schema.access import operator_mutation
from graphql_schema.context import Info

PORTAL_PATH = "/portal"  # the page, on the web process (WEBHOOKS_PUBLIC_URL in front of it)

PortalCapability = strawberry.enum(
    StrEnum("PortalCapability", [(word.name, word.name) for word in CapabilityWord]),
    description="What a portal session may do: READ (every query), MANAGE_ENDPOINTS (create, "
                "change, pause, resume, delete), REPLAY (one delivery or in bulk), "
                "ROTATE_SECRET, SEND_EXAMPLE (publish a catalog example to its own tenant).")


@strawberry.type(description="A portal session: its token (shown here only, never stored) and "
                             "the address of the page that uses it.")
class PortalSession:
    url: str = strawberry.field(
        description="The portal page for the tenant, the token in its fragment "
                    "(`/portal?tenant=…#token=…`: a fragment is never sent to a server); add "
                    "theme parameters to its query.")
    token: str
    expires_at: datetime


@strawberry.type(description="What the caller's portal session was granted.")
class PortalGrant:
    capabilities: list[PortalCapability]
    event_types: list[str] | None = strawberry.field(
        description="The subscriptions its endpoints may make (patterns cover what they "
                    "match); null: any.")
    expires_at: datetime


def grant_of(info: Info) -> PortalGrant | None:
    """Return what the caller's portal session was granted; None for an API token."""
    context = info.context
    if context.capabilities is None:
        return None
    return PortalGrant(
        capabilities=[PortalCapability[word.name] for word in CapabilityWord
                      if word in context.capabilities],
        event_types=None if context.allowed_event_types is None
        else list(context.allowed_event_types),
        expires_at=context.session_expires_at)


@strawberry.type
class PortalMutations:
    @operator_mutation(platform=True,
                       description="Mint a portal session for a live tenant: a token that "
                                   "acts as the tenant's own, for `expiresIn` seconds (60 to "
                                   "86400), limited to `capabilities` (omitted: all) and, "
                                   "given `eventTypes`, to subscriptions they cover.")
    def create_portal_session(self, info: Info, tenant: str, expires_in: int = 3600,
                              capabilities: list[PortalCapability] | None = None,
                              event_types: list[str] | None = None) -> PortalSession:
        owner = tenancy.named(info, tenant)
        if owner.deleted_at is not None:
            raise NotFound(f"tenant {owner.uid!r} not found")
        granted = list(CapabilityWord) if capabilities is None else [
            CapabilityWord[c.value] for c in capabilities]
        minted = portal_sessions.create(
            info.context.pool, tenant_id=owner.id, expires_in=expires_in,
            capabilities=granted, event_types=arguments.texts(event_types, "eventTypes"),
            created_by=info.context.token_name)
        page = info.context.portal_url or PORTAL_PATH
        address = f"{page}?{urllib.parse.urlencode({'tenant': owner.uid})}#token={minted.token}"
        return PortalSession(url=address,
                             token=minted.token, expires_at=minted.expires_at)

    @operator_mutation(platform=True,
                       description="End every live portal session of a tenant at once; "
                                   "return how many.")
    def revoke_portal_sessions(self, info: Info, tenant: str) -> int:
        return portal_sessions.revoke_all(info.context.pool, tenancy.named(info, tenant).id)

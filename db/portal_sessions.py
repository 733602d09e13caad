"""Portal sessions: short-lived bearer tokens for one tenant's self-service page, minted by the
platform, stored only as SHA-256 digests, revoked a tenant at a time.

A session acts as a token of its tenant (its scope), limited to its capabilities and, when
it names any, to the event types its endpoints may subscribe to.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from db import catalog
from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict
from db.sql import QUERIES
from db.tokens import Principal, digest
from db.vocabulary import PORTAL_ACTOR_PREFIX, PORTAL_TOKEN_PREFIX, PortalCapability

MIN_EXPIRES_IN = 60  # seconds: the shortest session
MAX_EXPIRES_IN = 86_400  # seconds: the longest session (a day); a platform mints a new one
MAX_EVENT_TYPES = 1000  # subscriptions a session may allow
READ_ONLY = frozenset({PortalCapability.READ})


@dataclass(frozen=True)
class MintedSession:
    id: int
    token: str  # shown once, never stored
    expires_at: datetime


def create(pool: ConnectionPool, *, tenant_id: int, expires_in: int,
           capabilities: Sequence[PortalCapability], event_types: Sequence[str] | None,
           created_by: str | None) -> MintedSession:
    """Mint a session of the live tenant `tenant_id`; NotFound when it is gone."""
    if not MIN_EXPIRES_IN <= expires_in <= MAX_EXPIRES_IN:
        raise InvalidInput(f"expiresIn: give {MIN_EXPIRES_IN} to {MAX_EXPIRES_IN} seconds")
    if not capabilities:
        raise InvalidInput("capabilities: give at least one (omit it for all)")
    if event_types is not None:
        if not 1 <= len(event_types) <= MAX_EVENT_TYPES:
            raise InvalidInput(f"eventTypes: give 1 to {MAX_EVENT_TYPES} types or patterns "
                               "(omit it for every type)")
        event_types = list(dict.fromkeys(catalog.check_subscription(t) for t in event_types))
    plain = PORTAL_TOKEN_PREFIX + secrets.token_urlsafe(32)
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["insert_portal_session"], {
            "tenant_id": tenant_id, "token_hash": digest(plain),
            "capabilities": sorted({PortalCapability(c).value for c in capabilities}),
            "event_types": event_types, "created_by": created_by, "expires_in": expires_in})
        row = as_dict(cursor)
    if row is None:
        raise NotFound("tenant not found")
    return MintedSession(id=row["id"], token=plain, expires_at=row["expires_at"])


def revoke_all(pool: ConnectionPool, tenant_id: int) -> int:
    """Revoke every live session of tenant `tenant_id`; return how many."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["revoke_portal_sessions"], {"tenant_id": tenant_id})
        return cursor.rowcount


def authenticate(pool: ConnectionPool, token: str) -> Principal | None:
    """Return who a live session's token acts as (its tenant, a viewer when it may only read),
    or None for an unknown, revoked or expired one, or one whose tenant is deleted."""
    if not token.startswith(PORTAL_TOKEN_PREFIX):
        return None
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["authenticate_portal_session"], {"token_hash": digest(token)})
        row = as_dict(cursor)
    if row is None:
        return None
    capabilities = frozenset(PortalCapability(c) for c in row["capabilities"])
    return Principal(name=f"{PORTAL_ACTOR_PREFIX}{row['id']}",
                     role="viewer" if capabilities <= READ_ONLY else "operator",
                     tenant_id=row["tenant_id"], tenant_uid=row["tenant_uid"],
                     capabilities=capabilities,
                     event_types=None if row["event_types"] is None
                     else tuple(row["event_types"]),
                     expires_at=row["expires_at"])

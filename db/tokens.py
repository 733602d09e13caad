"""API bearer tokens: minted once, stored only as SHA-256 digests, revoked by name."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from db.errors import InvalidInput, NotFound, UniqueViolation
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.scope import Scope
from db.sql import QUERIES
from db.vocabulary import TOKEN_PREFIX, PortalCapability

ROLES = ("viewer", "operator")
MAX_NAME_LENGTH = 100
MAX_EXPIRES_IN = 10 * 365 * 86400.0  # seconds: the longest lifetime a token may be given


@dataclass(frozen=True)
class Token:
    id: int
    name: str
    role: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    expires_at: datetime | None = None  # None: never
    tenant_uid: str | None = None  # the tenant it acts for; None: the whole platform

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def digest(token: str) -> str:
    """Return the stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create(pool: ConnectionPool, *, name: str, role: str, tenant_id: int | None,
           expires_in: float | None = None) -> tuple[Token, str]:
    """Mint a token for tenant `tenant_id` (None: the whole platform), valid for `expires_in`
    seconds (None: until revoked); return its record and the plain token, which is never
    stored. NotFound when the tenant is gone."""
    if role not in ROLES:
        raise InvalidInput(f"role: choose one of {', '.join(ROLES)}")
    if expires_in is not None and not 0 < expires_in <= MAX_EXPIRES_IN:
        raise InvalidInput(f"expires in: give more than 0 s and at most {MAX_EXPIRES_IN:.0f} s")
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"name: give 1 to {MAX_NAME_LENGTH} characters")
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with pool.transaction() as cursor:
            cursor.execute(QUERIES["insert_token"],
                           {"name": name, "role": role, "token_hash": digest(plain),
                            "expires_in": expires_in, "tenant_id": tenant_id})
            row = as_dict(cursor)
    except UniqueViolation:
        raise InvalidInput(f"name: a live token called {name!r} exists; revoke it first") from None
    if row is None:
        raise NotFound("tenant not found")
    return Token(**row), plain


def live(pool: ConnectionPool) -> list[Token]:
    """Return the tokens that are not revoked (expired ones included: their names stay taken
    until they are revoked)."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_tokens"])
        return [Token(**row) for row in as_dicts(cursor)]


def revoke(pool: ConnectionPool, name: str) -> Token:
    """Revoke the live token called `name`; return its record."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["revoke_token"], {"name": name})
        row = as_dict(cursor)
    if row is None:
        raise NotFound(f"no live token called {name!r}")
    return Token(**row)


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the token's name (never the token), its role, the tenant it
    acts for (None: the whole platform), and a portal session's limits."""

    name: str
    role: str
    tenant_id: int | None = None
    tenant_uid: str | None = None
    # A portal session's limits (db/portal_sessions.py); None for an API token, whose role
    # alone says what it may do.
    capabilities: frozenset[PortalCapability] | None = None
    event_types: tuple[str, ...] | None = None  # the subscriptions it may make; None: any
    expires_at: datetime | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id)


def authenticate(pool: ConnectionPool, token: str) -> Principal | None:
    """Return who a live token belongs to, or None for an unknown, revoked or expired one."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["authenticate_token"], {"token_hash": digest(token)})
        row = as_dict(cursor)
    return Principal(**row) if row else None

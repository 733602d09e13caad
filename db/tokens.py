"""API bearer tokens: minted once, stored only as SHA-256 digests, revoked by name."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from db.errors import InvalidInput, NotFound, UniqueViolation
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.sql import QUERIES

TOKEN_PREFIX = "whk_"
ROLES = ("viewer", "operator")
MAX_NAME_LENGTH = 100


@dataclass(frozen=True)
class Token:
    id: int
    name: str
    role: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


def digest(token: str) -> str:
    """Return the stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create(pool: ConnectionPool, *, name: str, role: str) -> tuple[Token, str]:
    """Mint a token; return its record and the plain token, which is never stored."""
    if role not in ROLES:
        raise InvalidInput(f"role: choose one of {', '.join(ROLES)}")
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"name: give 1 to {MAX_NAME_LENGTH} characters")
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with pool.transaction() as cursor:
            cursor.execute(QUERIES["insert_token"],
                           {"name": name, "role": role, "token_hash": digest(plain)})
            return Token(**as_dict(cursor)), plain
    except UniqueViolation:
        raise InvalidInput(f"name: a live token called {name!r} exists; revoke it first") from None


def live(pool: ConnectionPool) -> list[Token]:
    """Return the tokens that are not revoked."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_tokens"])
        return [Token(**row) for row in as_dicts(cursor)]


def revoke(pool: ConnectionPool, name: str) -> None:
    """Revoke the live token called `name`."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["revoke_token"], {"name": name})
        if cursor.rowcount == 0:
            raise NotFound(f"no live token called {name!r}")


def role_of(pool: ConnectionPool, token: str) -> str | None:
    """Return the role of a live token, or None for an unknown or revoked one."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["authenticate_token"], {"token_hash": digest(token)})
        row = cursor.fetchone()
    return row[0] if row else None

"""Subscriber configs: endpoint, secret and event types; one function per change."""

from __future__ import annotations

import base64
import binascii
import secrets as random_secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.sql import QUERIES

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24  # random bytes in a generated secret
SECRET_MIN_BYTES, SECRET_MAX_BYTES = 24, 64  # accepted key sizes (Standard Webhooks)
MAX_EVENT_TYPE_LENGTH = 255
MAX_ENDPOINT_LENGTH = 2048
# Rotated-out secrets that keep signing at once, newest first. Each adds a signature (about 50
# bytes) to every request's `webhook-signature` header and an HMAC to every attempt; without a
# cap, rotating in a loop would grow the header without bound.
MAX_PREVIOUS_SECRETS = 5


@dataclass(frozen=True)
class Config:
    id: str
    name: str | None
    endpoint: str
    event_types: list[str]
    active: bool
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Config:
        return cls(**row)


@dataclass(frozen=True)
class ConfigChange:
    """A config after a change, and how many pending deliveries the change cancelled."""

    config: Config
    cancelled: int = 0


def mint_secret() -> str:
    """Return a new random `whsec_` secret."""
    return SECRET_PREFIX + base64.b64encode(random_secrets.token_bytes(SECRET_BYTES)).decode()


def check_secret(secret: str) -> str:
    """Return `secret` if it is `whsec_<base64>` (or bare base64) of 24 to 64 bytes."""
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("secret: must be whsec_ followed by base64") from None
    if not SECRET_MIN_BYTES <= len(key) <= SECRET_MAX_BYTES:
        raise InvalidInput(
            f"secret: must encode {SECRET_MIN_BYTES} to {SECRET_MAX_BYTES} bytes, not {len(key)}"
        )
    return secret.strip()


def check_endpoint(endpoint: str) -> str:
    """Return `endpoint` if it is an absolute http(s) URL with a host."""
    url = endpoint.strip()
    if len(url) > MAX_ENDPOINT_LENGTH:
        raise InvalidInput(f"endpoint: longer than {MAX_ENDPOINT_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise InvalidInput(f"endpoint: not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidInput("endpoint: must be an http:// or https:// URL")
    if not parts.hostname:
        raise InvalidInput("endpoint: must name a host")
    if parts.username or parts.password:
        raise InvalidInput("endpoint: must not carry credentials")
    if port == 0:
        raise InvalidInput("endpoint: port 0 is not valid")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise InvalidInput("endpoint: must not contain spaces or control characters")
    return url


def check_event_types(event_types: Sequence[str]) -> list[str]:
    """Return the distinct, non-empty event types, in the order given."""
    cleaned = list(dict.fromkeys(t.strip() for t in event_types))
    if not cleaned:
        raise InvalidInput("eventTypes: give at least one event type")
    for event_type in cleaned:
        if not event_type:
            raise InvalidInput("eventTypes: event types must not be empty")
        if len(event_type) > MAX_EVENT_TYPE_LENGTH:
            raise InvalidInput(f"eventTypes: longer than {MAX_EVENT_TYPE_LENGTH} characters")
    return cleaned


def create(
    pool: ConnectionPool,
    *,
    endpoint: str,
    event_types: Sequence[str],
    name: str | None = None,
    secret: str | None = None,
    active: bool = True,
    id: str | None = None,
) -> tuple[Config, str]:
    """Create a config; return it and its secret (minted when none is given)."""
    secret = check_secret(secret) if secret else mint_secret()
    params = {
        "id": id,
        "name": name,
        "endpoint": check_endpoint(endpoint),
        "secret": secret,
        "event_types": check_event_types(event_types),
        "active": active,
    }
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["insert_config"], params)
        return Config.from_row(as_dict(cursor)), secret


def get(pool: ConnectionPool, id: str) -> Config | None:
    """Return the config `id`, or None if it does not exist or was deleted."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_config"], {"id": id})
        row = as_dict(cursor)
    return Config.from_row(row) if row else None


def page(
    pool: ConnectionPool,
    *,
    limit: int,
    active: bool | None = None,
    after: tuple[datetime, str] | None = None,
) -> list[Config]:
    """Return up to `limit` configs, newest first, after the `(created_at, id)` position."""
    after_created, after_id = after or (None, None)
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["list_configs"],
            {"active": active, "after_created": after_created, "after_id": after_id,
             "limit": limit},
        )
        return [Config.from_row(row) for row in as_dicts(cursor)]


def update(
    pool: ConnectionPool,
    id: str,
    *,
    endpoint: str | None = None,
    event_types: Sequence[str] | None = None,
    name: str | None = None,
    set_name: bool = False,
) -> Config:
    """Change the endpoint, event types or name of a config; later attempts use them."""
    params = {
        "id": id,
        "endpoint": None if endpoint is None else check_endpoint(endpoint),
        "event_types": None if event_types is None else check_event_types(event_types),
        "name": name,
        "set_name": set_name,
    }
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["update_config"], params)
        return _found(as_dict(cursor), id)


def activate(pool: ConnectionPool, id: str) -> Config:
    """Mark a config active; deliveries cancelled earlier stay cancelled."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["set_config_active"], {"id": id, "active": True})
        return _found(as_dict(cursor), id)


def deactivate(pool: ConnectionPool, id: str) -> ConfigChange:
    """Mark a config inactive and cancel its pending deliveries, in one transaction."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["set_config_active"], {"id": id, "active": False})
        config = _found(as_dict(cursor), id)
        cursor.execute(QUERIES["cancel_pending_deliveries_of_config"], {"id": id})
        return ConfigChange(config, cursor.rowcount)


def delete(pool: ConnectionPool, id: str) -> ConfigChange:
    """Delete a config (its row stays for history) and cancel its pending deliveries."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["delete_config"], {"id": id})
        config = _found(as_dict(cursor), id)
        cursor.execute(QUERIES["cancel_pending_deliveries_of_config"], {"id": id})
        return ConfigChange(config, cursor.rowcount)


def rotate_secret(
    pool: ConnectionPool, id: str, *, grace_seconds: float, secret: str | None = None
) -> tuple[Config, str]:
    """Install a new secret (minted when none is given); the old ones sign during their grace.

    The current secret keeps signing for `grace_seconds`, alongside earlier rotated-out
    secrets whose grace has not ended (the newest `MAX_PREVIOUS_SECRETS` of them). A grace of
    0 revokes at once: every previous secret stops signing.
    """
    secret = check_secret(secret) if secret else mint_secret()
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["rotate_config_secret"],
            {"id": id, "secret": secret, "grace_seconds": float(grace_seconds),
             "keep": MAX_PREVIOUS_SECRETS},
        )
        return _found(as_dict(cursor), id), secret


def _found(row: dict[str, Any] | None, id: str) -> Config:
    if row is None:
        raise NotFound(f"config {id!r} not found")
    return Config.from_row(row)

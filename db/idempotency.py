"""Idempotency records of replay requests: one key, one request, one result, for 24 hours.

Requests carrying the same key are serialised by a transaction-scoped advisory lock, so two
identical requests racing each other run the operation once and both get its result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from db.errors import Conflict, InvalidInput
from db.pool import ConnectionPool
from db.rows import as_dict
from db.scope import Scope
from db.sql import QUERIES

TTL = 24 * 3600.0  # seconds a key remembers its request and result
MAX_KEY_LENGTH = 255
LOCK_NAMESPACE = 7_245_102  # first key of the advisory locks taken on idempotency keys
# Whose keys a platform-wide caller's are: no tenant's (tenant ids start at 1).
PLATFORM_KEYS = 0


def check_key(key: str | None) -> str:
    """Return `key` if it is 1 to 255 printable ASCII characters, else raise InvalidInput."""
    if not key or not key.strip():
        raise InvalidInput("Idempotency-Key: this request needs an Idempotency-Key header")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"Idempotency-Key: longer than {MAX_KEY_LENGTH} characters")
    if not all(" " <= ch <= "~" for ch in key):
        raise InvalidInput("Idempotency-Key: use printable ASCII characters only")
    return key


def fingerprint(operation: str, arguments: dict[str, Any]) -> str:
    """Return a digest that is equal for equal requests (operation and arguments)."""
    text = json.dumps([operation, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run_once(
    pool: ConnectionPool,
    scope: Scope,
    *,
    key: str,
    fingerprint: str,
    operation: Callable[[Any], dict[str, Any]],
    ttl: float = TTL,
) -> tuple[dict[str, Any], bool]:
    """Run `operation(cursor)` once per key of `scope`; return its JSON result and whether it
    ran now. Keys are per tenant (a platform-wide caller's are its own): the same key sent by
    two tenants is two keys.

    A key seen within `ttl` seconds returns the remembered result without running anything,
    or raises Conflict if it was used for a different request. The operation and the record
    commit together: when the operation raises, nothing is remembered.
    """
    with pool.transaction() as cursor:
        owner = {"owner": PLATFORM_KEYS if scope.tenant_id is None else scope.tenant_id}
        cursor.execute(QUERIES["lock_idempotency_key"],
                       {**owner, "namespace": LOCK_NAMESPACE, "key": key})
        cursor.execute(QUERIES["find_idempotency_record"], {**owner, "key": key, "ttl": ttl})
        found = as_dict(cursor)
        if found is not None:
            if found["request_fingerprint"] != fingerprint:
                raise Conflict("this Idempotency-Key was already used for a different request")
            return found["result"], False
        result = operation(cursor)
        cursor.execute(
            QUERIES["remember_idempotency_record"],
            {**owner, "key": key, "fingerprint": fingerprint, "result": json.dumps(result),
             "ttl": ttl},
        )
        if cursor.fetchone() is None:  # cannot happen under the lock; never overwrite a record
            raise Conflict("this Idempotency-Key is in use by a concurrent request")
        return result, True

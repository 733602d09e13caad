"""Rejected broker messages: kept with their raw bytes and the reason, never dropped silently."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.pool import ConnectionPool
from db.rows import as_dicts
from db.sql import QUERIES


@dataclass(frozen=True)
class Rejection:
    """A message to quarantine: where it was in the broker, why, its bytes, and what it takes
    to read it again (its key and headers, the tenant uid it named if that was the reason)."""

    topic: str
    partition: int
    offset: int
    reason: str
    raw: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    tenant_uid: str | None = None


@dataclass(frozen=True)
class RejectedEvent:
    id: int
    topic: str
    partition: int
    offset: int
    reason: str
    raw: bytes | None
    created_at: datetime
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    tenant_uid: str | None = None  # the tenant it named, when no such tenant existed
    replayed_at: datetime | None = None  # when it was ingested after all


def store(cursor: Any, rejections: Sequence[Rejection]) -> list[Rejection]:
    """Quarantine `rejections` in the caller's transaction; return those not already stored."""
    if not rejections:
        return []
    cursor.execute(
        QUERIES["insert_rejected_events"],
        {
            "topics": [r.topic for r in rejections],
            "partitions": [r.partition for r in rejections],
            "offsets": [r.offset for r in rejections],
            "reasons": [r.reason for r in rejections],
            "raws": [r.raw for r in rejections],
            "keys": [r.key for r in rejections],
            "headers": [_headers_json(r.headers) for r in rejections],
            "tenant_uids": [r.tenant_uid for r in rejections],
        },
    )
    new = {(row["topic"], row["partition"], row["offset"]) for row in as_dicts(cursor)}
    return [r for r in rejections if (r.topic, r.partition, r.offset) in new]


def _headers_json(headers: Sequence[tuple[str, bytes | None]]) -> str | None:
    """Return a message's headers as JSON: [[name, base64 value or null], ...]."""
    if not headers:
        return None
    return json.dumps([[name, None if value is None else base64.b64encode(value).decode()]
                       for name, value in headers])


def _rejected(row: dict[str, Any]) -> RejectedEvent:
    headers = row.get("headers")
    return RejectedEvent(**{
        **row, "raw": None if row["raw"] is None else bytes(row["raw"]),
        "key": None if row.get("key") is None else bytes(row["key"]),
        "headers": None if headers is None else [
            (name, None if value is None else base64.b64decode(value))
            for name, value in headers]})


def page(pool: ConnectionPool, *, limit: int, after_id: int | None = None) -> list[RejectedEvent]:
    """Return up to `limit` rejected messages, newest first, older than `after_id`."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_rejected_events"], {"limit": limit, "after_id": after_id})
        return [_rejected(row) for row in as_dicts(cursor)]


def locked_for_replay(cursor: Any, *, ids: Sequence[int] | None = None,
                      tenant_uid: str | None = None, limit: int) -> list[RejectedEvent]:
    """In the caller's transaction, lock and return up to `limit` rejected messages not yet
    ingested: those of `ids`, or those that named the tenant `tenant_uid`, oldest first."""
    cursor.execute(QUERIES["rejected_events_to_replay"],
                   {"ids": None if ids is None else list(ids), "tenant_uid": tenant_uid,
                    "limit": limit})
    return [_rejected(row) for row in as_dicts(cursor)]


def mark_replayed(cursor: Any, ids: Sequence[int]) -> None:
    """In the caller's transaction, note that the rejected messages `ids` were ingested."""
    cursor.execute(QUERIES["mark_rejected_events_replayed"], {"ids": list(ids)})


def count(pool: ConnectionPool) -> int:
    """Return how many broker messages were rejected."""
    return pool.execute("count_rejected_events")[0][0]

"""Ordered delivery's operator side: the keys a failure holds, and skipping past one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.errors import NotEligible, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.scope import Scope
from db.sql import QUERIES

WAITING_BOUND = 10_000  # deliveries behind a held key counted exactly, at most


@dataclass(frozen=True)
class BlockedKey:
    ordering_key: str
    delivery_id: int  # the failed delivery that holds it
    sequence: int
    since: datetime  # when that delivery failed
    last_status_code: int | None
    last_error: str | None
    waiting: int  # pending deliveries of the key behind it (up to WAITING_BOUND)


@dataclass(frozen=True)
class Skipped:
    id: int
    ordering_key: str
    sequence: int


def skip(cursor: Any, scope: Scope, delivery_id: int) -> Skipped:
    """Let the key a failed delivery holds go on past it, within the caller's transaction;
    raise NotFound for an unknown delivery and NotEligible (saying why) when it holds none."""
    cursor.execute(QUERIES["skip_delivery"], {**scope.params(), "id": delivery_id})
    row = as_dict(cursor)
    if row is not None:
        return as_type(Skipped, row)
    cursor.execute(QUERIES["skip_blocker"], {**scope.params(), "id": delivery_id})
    found = as_dict(cursor)
    if found is None:
        raise NotFound(f"delivery {delivery_id} not found")
    raise NotEligible(f"delivery {delivery_id} holds no ordering key (it is {found['status']}"
                      f"{'' if found['ordered'] else ', of no ordered key'}); only a failed "
                      "delivery that holds its key can be skipped")


def blocked_keys(pool: ConnectionPool, scope: Scope, config_id: str, *, limit: int,
                 after: str | None = None) -> list[BlockedKey]:
    """Return up to `limit` of a config's keys held by a failure, by key, after `after`."""
    with pool.transaction() as db:
        db.execute(QUERIES["blocked_keys"], {**scope.params(), "config_id": config_id,
                                             "after": after,
                                             "limit": limit, "waiting_bound": WAITING_BOUND})
        return [as_type(BlockedKey, row) for row in as_dicts(db)]


def count_blocked(pool: ConnectionPool) -> int:
    """Return how many distinct keys a failure holds now, over the active ordered configs."""
    with pool.transaction() as db:
        db.execute(QUERIES["count_blocked_keys"])
        return as_dict(db)["blocked"]

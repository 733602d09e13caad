"""Deliveries through their lifecycle: claim, record an attempt, release, recover.

Every state change is one guarded statement: it names the state it leaves in its WHERE
clause, and a worker changes a delivery only while it holds the claim token it was given.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from db.errors import NotEligible, NotFound
from db.pool import ConnectionPool
from db.sql import QUERIES

TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Claimed:
    """A delivery this worker holds, with the event and the config as they are now."""

    id: int
    event_id: str
    event_type: str
    payload: str
    occurred_at: datetime
    config_id: str
    config_active: bool
    endpoint: str
    secret: str = field(repr=False)
    previous_secrets: list[str] = field(repr=False)  # unexpired rotated-out ones, newest first
    attempt_count: int
    replay_generation: int
    generation_started_at: datetime
    last_backoff: float | None  # seconds, the backoff chosen after the previous attempt
    claimed_at: datetime
    token: uuid.UUID


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt did, and the state its delivery should move to."""

    delivery_id: int
    token: uuid.UUID
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: str
    status_code: int
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    next_status: str
    next_delay: float | None
    last_error: str | None
    next_backoff: float | None = None  # the policy's delay within next_delay, kept for jitter


@dataclass(frozen=True)
class Moved:
    """A delivery that changed state, its new state, and the claim that moved it (if any)."""

    id: int
    status: str
    next_attempt_at: datetime | None = None
    token: uuid.UUID | None = None


def claim_due(pool: ConnectionPool, *, owner: str, limit: int) -> list[Claimed]:
    """Claim up to `limit` due deliveries for `owner`; they are `delivering` on return."""
    token = uuid.uuid4()
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["claim_due_deliveries"], {"limit": limit, "owner": owner, "token": str(token)}
        )
        rows = cursor.fetchall()
    return [Claimed(*row, token=token) for row in rows]


def record(pool: ConnectionPool, results: Sequence[AttemptResult]) -> list[Moved]:
    """Append the attempts and move each still-claimed delivery to its next state."""
    if not results:
        return []
    params = {
        "ids": [r.delivery_id for r in results],
        "tokens": [str(r.token) for r in results],
        "attempt_numbers": [r.attempt_number for r in results],
        "generations": [r.replay_generation for r in results],
        "endpoints": [r.endpoint for r in results],
        "outcomes": [r.outcome for r in results],
        "status_codes": [r.status_code for r in results],
        "durations_ms": [r.duration_ms for r in results],
        "excerpts": [r.response_excerpt for r in results],
        "errors": [r.error for r in results],
        "next_statuses": [r.next_status for r in results],
        "next_delays": [r.next_delay for r in results],
        "last_errors": [r.last_error for r in results],
        "next_backoffs": [r.next_backoff for r in results],
    }
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["record_attempts"], params)
        return [Moved(id, status, due, uuid.UUID(str(token)))
                for id, token, status, due, _ in cursor.fetchall()]


def release(pool: ConnectionPool, claims: Sequence[tuple[int, uuid.UUID]]) -> list[Moved]:
    """Hand claims back without an attempt: pending now, or cancelled if the config is off."""
    if not claims:
        return []
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["release_claims"],
            {"ids": [id for id, _ in claims], "tokens": [str(token) for _, token in claims]},
        )
        return [Moved(id, status) for id, status, _ in cursor.fetchall()]


def recover_stale(pool: ConnectionPool, *, timeout: float, limit: int) -> list[Moved]:
    """Return up to `limit` claims older than `timeout` seconds to the queue (or cancel them)."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["recover_stale_claims"], {"timeout": float(timeout), "limit": limit})
        return [Moved(id, status) for id, status, _ in cursor.fetchall()]


def seconds_until_next_due(pool: ConnectionPool) -> float | None:
    """Return the seconds until the earliest pending delivery is due, or None if none is."""
    return pool.execute("seconds_until_next_due")[0][0]


def queue_depth(pool: ConnectionPool, *, cap: int = 1_000_000) -> int:
    """Return the number of pending deliveries, counting at most `cap`."""
    return pool.execute("queue_depth", {"cap": cap})[0][0]


@dataclass(frozen=True)
class Replay:
    """What a replay did: `REPLAYED` (new generation) or `EXPEDITED` (due now)."""

    delivery_id: int
    action: str
    replay_generation: int
    next_attempt_at: datetime


def replay(cursor: Any, delivery_id: int) -> Replay:
    """Replay a failed delivery or expedite a pending one, within the caller's transaction.

    Raises NotFound for an unknown delivery and NotEligible (saying why) for any other state,
    or when its config is inactive or deleted.
    """
    cursor.execute(QUERIES["replay_delivery"], {"id": delivery_id})
    row = cursor.fetchone()
    if row is not None:
        return Replay(*row[:4])
    cursor.execute(QUERIES["replay_blocker"], {"id": delivery_id})
    blocker = cursor.fetchone()
    if blocker is None:
        raise NotFound(f"delivery {delivery_id} not found")
    status, config_active = blocker
    if status in ("failed", "pending") and not config_active:
        raise NotEligible(f"delivery {delivery_id} belongs to an inactive or deleted config")
    raise NotEligible(
        f"delivery {delivery_id} is {status}; only failed and pending deliveries can be replayed"
    )


@dataclass(frozen=True)
class ReplayPage:
    """What a bulk replay did to one page: ids replayed, expedited, and skipped with why."""

    replayed: list[int]
    expedited: list[int]
    skipped: list[tuple[int, str]]
    has_more: bool

    @property
    def last_id(self) -> int | None:
        """The smallest id of the page: where the next page starts below."""
        ids = [*self.replayed, *self.expedited, *(id for id, _ in self.skipped)]
        return min(ids) if ids else None


def replay_page(
    cursor: Any,
    *,
    created_from: datetime,
    created_to: datetime,
    statuses: Sequence[str],
    config_ids: Sequence[str] | None,
    before_id: int | None,
    limit: int,
) -> ReplayPage:
    """Replay or expedite one page of deliveries of a creation window, within a transaction."""
    cursor.execute(QUERIES["replay_deliveries_page"], {
        "created_from": created_from, "created_to": created_to, "statuses": list(statuses),
        "config_ids": list(config_ids) if config_ids else None, "before_id": before_id,
        "limit": limit,
    })
    rows = cursor.fetchall()
    replayed, expedited, skipped = [], [], []
    for id, action, status, config_active, _, _ in rows:
        if action == "REPLAYED":
            replayed.append(id)
        elif action == "EXPEDITED":
            expedited.append(id)
        elif status not in ("failed", "pending"):
            skipped.append((id, f"{status}: only failed and pending deliveries replay"))
        elif not config_active:
            skipped.append((id, "its config is inactive or deleted"))
        else:
            skipped.append((id, "it changed state during the replay"))
    return ReplayPage(replayed, expedited, skipped, has_more=bool(rows) and rows[0][4])

"""Each config's attempts and successes over a recent window, counted in five-minute periods
by the statement that records attempts: exact per config at any number of configs, and the
configs that need a person first."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from db.pool import ConnectionPool
from db.rows import as_dicts, as_type
from db.scope import Scope
from db.sql import QUERIES

PERIOD_SECONDS = 300  # the counting period: a window's first period counts whole
MAX_HOURS = 48  # the longest window asked for
UNANSWERED_SECONDS = 10  # an attempt under way longer than this needs a look
KEPT_SECONDS = MAX_HOURS * 3600 + PERIOD_SECONDS  # counts older than this are deleted


@dataclass(frozen=True)
class AttemptRate:
    attempts: int
    succeeded: int

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.attempts if self.attempts else None


NO_ATTEMPTS = AttemptRate(attempts=0, succeeded=0)


@dataclass(frozen=True)
class Attention:
    """A config a person should look at, and why."""

    id: str
    name: str | None
    endpoint: str
    state: str
    last_failure: str | None
    last_failure_at: datetime | None
    reason: str | None
    failures: int
    attempts: int
    unanswered: int  # attempts under way for more than UNANSWERED_SECONDS
    unanswered_since: datetime | None  # when the oldest of them was claimed


def recent(pool: ConnectionPool, scope: Scope, config_ids: Collection[str], *,
           since: datetime) -> dict[str, AttemptRate]:
    """Return the attempts and successes of each of `config_ids` since `since` (no attempts:
    NO_ATTEMPTS)."""
    if not config_ids:
        return {}
    with pool.transaction() as db:
        db.execute(QUERIES["config_attempt_rates"],
                   {**scope.params(), "ids": list(config_ids), "since": since})
        found = {row["config_id"]: as_type(AttemptRate, row) for row in as_dicts(db)}
    return {id: found.get(id, NO_ATTEMPTS) for id in config_ids}


def needing_attention(pool: ConnectionPool, scope: Scope, *, since: datetime,
                      limit: int) -> list[Attention]:
    """Return up to `limit` active configs to look at first: open or half-open circuits, then
    the most failed attempts since `since` or attempts under way for more than
    UNANSWERED_SECONDS, then paused ones."""
    with pool.transaction() as db:
        db.execute(QUERIES["configs_needing_attention"],
                   {**scope.params(), "since": since, "limit": limit,
                    "unanswered": UNANSWERED_SECONDS})
        return [as_type(Attention, row) for row in as_dicts(db)]

"""The evidence of a chaos run: what was published, what the database holds, what was POSTed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from db.adhoc import sql


@dataclass(frozen=True)
class Delivery:
    id: int
    event_id: str
    config_id: str
    status: str
    attempt_count: int
    replay_generation: int
    last_status_code: int | None
    last_error: str | None
    webhook_id: str | None = None  # None: its number, as sent before webhook ids were keys

    @property
    def sent_id(self) -> str:
        """The `webhook-id` its requests carry."""
        return self.webhook_id or str(self.id)


@dataclass(frozen=True)
class Attempt:
    delivery_id: int
    attempt_number: int
    replay_generation: int
    outcome: str
    status_code: int
    duration_ms: int


@dataclass
class Kill:
    """One SIGKILL: when the worker was dead (Unix time), its pid, the claims it still held."""

    at: float
    pid: int
    held: list[int]


@dataclass
class Evidence:
    """Everything a verdict is drawn from."""

    published: dict[str, str]  # event id -> type, as sent into the service
    subscriptions: dict[str, tuple[str, ...]]  # active config id -> its event types
    events: set[str]  # event ids stored
    deliveries: list[Delivery]
    attempts: list[Attempt]
    posts: list[dict[str, Any]]  # the receiver's record, one per request it read
    kills: list[Kill] | None = None  # None: a scenario without kills


def gather(dsn: str, published: dict[str, str], posts: list[dict],
           kills: list[Kill] | None = None) -> Evidence:
    """Read the run's evidence from the database at `dsn`."""
    configs = sql(dsn, "SELECT id, event_types FROM configs WHERE active"
                           " AND deleted_at IS NULL")
    events = sql(dsn, "SELECT id FROM events")
    deliveries = sql(dsn, "SELECT id, event_id, config_id, status, attempt_count,"
                              " replay_generation, last_status_code, last_error, webhook_id"
                              " FROM deliveries")
    attempts = sql(dsn, "SELECT delivery_id, attempt_number, replay_generation, outcome,"
                            " status_code, duration_ms FROM delivery_attempts")
    return Evidence(
        published=published,
        subscriptions={id: tuple(types) for id, types in configs},
        events={row[0] for row in events},
        deliveries=[Delivery(*row) for row in deliveries],
        attempts=[Attempt(*row) for row in attempts],
        posts=posts,
        kills=kills,
    )

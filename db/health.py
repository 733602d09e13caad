"""Endpoint health of each config: pause, circuit breaker, in-flight count, cap and rate.

One `config_health` row per config. The claim statement reads and updates it in the claim's
transaction; `settle` updates it in the transaction that records attempts or hands claims
back; the operator's pause, resume and circuit reset are one guarded statement each.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dicts, as_type
from db.scope import Scope
from db.sql import QUERIES
from db.vocabulary import (
    PLATFORM_ACTOR,
    PORTAL_ACTOR_PREFIX,
    CircuitState,
    HealthChangeKind,
    HealthState,
    Verdict,
)

MAX_IN_FLIGHT = 10_000  # largest per-config cap accepted
MAX_RATE = 100_000.0  # requests per second, largest per-config rate accepted
RATE_BURST = 0.1  # seconds of a config's rate one claim may take at once (at least one)
KEEP: Any = object()  # a limit left as it is
NEVER = 2**31 - 1  # a breaker threshold no count reaches: the breaker is off


@dataclass(frozen=True)
class HealthRules:
    """The breaker's thresholds and the default cap, as the worker's settings give them."""

    # Requests of one config a worker sends at once (and the most one claim takes) unless the
    # config has a maxInFlight, which bounds it across all workers; also the ramp's end.
    cap: int = 25
    ramp: float = 30.0  # seconds for the cap to grow back from 1 after a resume or a close
    failures_to_open: int = 20  # consecutive retryable failures that open the circuit
    failure_ratio: float = 0.5  # ... or this share of the window's attempts failing
    window: float = 60.0  # seconds of the failure-ratio window
    min_volume: int = 100  # fewest attempts in the window before the ratio counts
    probe_interval: float = 30.0  # seconds from opening to the first probe
    max_probe_interval: float = 600.0  # seconds; each failed probe doubles the interval

    def params(self) -> dict[str, Any]:
        return {"cap": self.cap, "ramp": self.ramp, "failures_to_open": self.failures_to_open,
                "failure_ratio": self.failure_ratio, "window": self.window,
                "min_volume": self.min_volume, "probe_interval": self.probe_interval,
                "max_probe_interval": self.max_probe_interval}


@dataclass(frozen=True)
class Health:
    """A config's health as the API shows it."""

    config_id: str
    state: HealthState
    paused_at: datetime | None
    consecutive_failures: int
    opened_at: datetime | None
    next_probe_at: datetime | None
    last_failure: str | None
    last_failure_at: datetime | None
    reason: str | None
    changed_at: datetime
    in_flight: int
    max_in_flight: int | None
    rate_per_second: float | None


@dataclass(frozen=True)
class Settled:
    """What one claim's end means for its config's circuit."""

    delivery_id: int
    token: uuid.UUID
    verdict: Verdict
    error: str | None = None
    freed: bool = True  # the claim ended here: its in-flight slot is free
    sent_at: datetime | None = None  # when the attempt's request went out (database clock)


@dataclass(frozen=True)
class Transition:
    """A circuit that changed when attempts were settled."""

    config_id: str
    source: CircuitState
    target: CircuitState
    reason: str | None
    consecutive_failures: int
    next_probe_at: datetime | None


def settle(cursor: Any, settled: Sequence[Settled], rules: HealthRules) -> list[Transition]:
    """Free the claims' slots and move their configs' circuits, in the caller's transaction."""
    if not settled:
        return []
    cursor.execute_prepared("settle_config_health", {
        "ids": [s.delivery_id for s in settled],
        "tokens": [str(s.token) for s in settled],
        "verdicts": [s.verdict for s in settled],
        "errors": [s.error for s in settled],
        "freed": [s.freed for s in settled],
        "sent_at": [s.sent_at for s in settled],
        **rules.params(),
    })
    return transitions(as_dicts(cursor))


def transitions(rows: Sequence[dict[str, Any]]) -> list[Transition]:
    """Return the circuits that changed among a settlement's rows (one per config settled)."""
    return [as_type(Transition, row) for row in rows if row["source"] != row["target"]]


@dataclass(frozen=True)
class Correction:
    """A config whose in-flight count or probe disagreed with its deliveries in flight."""

    config_id: str
    counted: int  # the in-flight count found
    in_flight: int  # the deliveries really in flight, which the count now says
    probe_lost: bool  # its circuit was half-open with no probe in flight; open again now


def reconcile(pool: ConnectionPool) -> list[Correction]:
    """Bring every in-flight count and half-open probe in line with the deliveries in flight.

    Two statements in one transaction: the first locks the health rows, so the second's
    snapshot sees every claim, record and hand-back of those configs committed or not begun.
    """
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["lock_counted_configs"])
        ids = [id for (id,) in cursor.fetchall()]
        if not ids:
            return []
        cursor.execute(QUERIES["reconcile_in_flight"], {"ids": ids})
        return [as_type(Correction, row) for row in as_dicts(cursor)]


def pause(pool: ConnectionPool, scope: Scope, id: str, *, reason: str,
          actor: str | None = None) -> bool:
    """Pause config `id`; return False when it was paused already. Raise NotFound."""
    return _change(pool, scope, "pause_config", id, reason, actor)


def resume(pool: ConnectionPool, scope: Scope, id: str, *, reason: str,
           actor: str | None = None) -> bool:
    """Resume config `id` with the ramp; return False when it was not paused. Raise NotFound."""
    return _change(pool, scope, "resume_config", id, reason, actor)


def reset_circuit(pool: ConnectionPool, scope: Scope, id: str, *, reason: str,
                  actor: str | None = None) -> bool:
    """Close config `id`'s circuit with the ramp; return False when it was closed."""
    return _change(pool, scope, "reset_circuit", id, reason, actor)


def act_as(cursor: Any, actor: str | None, reason: str | None = None) -> None:
    """Name who changes what this transaction changes, and why: the health history's rows
    carry them (None: the service itself)."""
    cursor.execute(QUERIES["act_as"], {"actor": actor, "reason": reason})


@dataclass(frozen=True)
class HealthChange:
    """One row of a config's health history."""

    id: int
    config_id: str
    changed_at: datetime
    change: HealthChangeKind
    circuit: CircuitState | None  # the circuit after the change (None for activity changes)
    actor: str | None  # an API token's name, `cli:<user>`; None: the service itself
    reason: str | None


# A portal session's actor name, as the statements match it (its prefix holds no character a
# regular expression reads otherwise).
SESSION_ACTOR = f"^{PORTAL_ACTOR_PREFIX}[0-9]{{1,18}}$"


def changes(pool: ConnectionPool, scope: Scope, id: str, *, limit: int,
            before: int | None = None) -> list[HealthChange]:
    """Return config `id`'s health history, newest first, below the id `before`. A tenant's
    `scope` reads who acted only where it was one of its own tokens or portal sessions; any
    other actor (the platform's tokens, its on-call commands) reads PLATFORM_ACTOR."""
    rows = pool.rows("health_changes_of_config",
                     {**scope.params(), "id": id, "limit": limit, "before": before,
                      "session_actor": SESSION_ACTOR, "platform_actor": PLATFORM_ACTOR})
    return [HealthChange(**{**row, "change": HealthChangeKind(row["change"]),
                            "circuit": None if row["circuit"] is None
                            else CircuitState(row["circuit"])}) for row in rows]


def _change(pool: ConnectionPool, scope: Scope, statement: str, id: str, reason: str,
            actor: str | None) -> bool:
    with pool.transaction() as cursor:
        act_as(cursor, actor, reason)
        cursor.execute(QUERIES[statement], {**scope.params(), "id": id, "reason": reason})
        if cursor.fetchall():
            return True
        cursor.execute(QUERIES["get_config"], {**scope.params(), "id": id})
        if cursor.fetchone() is None:
            raise NotFound(f"config {id!r} not found")
        return False


def note_reason(cursor: Any, id: str, reason: str) -> None:
    """Record why config `id` last changed, in the caller's transaction."""
    cursor.execute(QUERIES["note_config_health_reason"], {"id": id, "reason": reason})


def check_max_in_flight(value: int | None) -> int | None:
    """Return a per-config cap if it is 1 to MAX_IN_FLIGHT (None: the default)."""
    if value is not None and not 1 <= value <= MAX_IN_FLIGHT:
        raise InvalidInput(f"maxInFlight: must be 1 to {MAX_IN_FLIGHT:,}, not {value}")
    return value


def check_rate(value: float | None) -> float | None:
    """Return a per-config rate if it is above 0 and at most MAX_RATE (None: no limit)."""
    if value is not None and not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise InvalidInput(
            f"ratePerSecond: must be above 0 and at most {MAX_RATE:,.0f}, not {value}")
    return value


def set_limits(cursor: Any, id: str, *, max_in_flight: int | None = KEEP,
               rate_per_second: float | None = KEEP) -> None:
    """Set config `id`'s cap and rate (checked; KEEP leaves one), in the caller's transaction."""
    if max_in_flight is KEEP and rate_per_second is KEEP:
        return
    cursor.execute(QUERIES["set_config_limits"], {
        "id": id,
        "set_cap": max_in_flight is not KEEP,
        "max_in_flight": None if max_in_flight is KEEP else check_max_in_flight(max_in_flight),
        "set_rate": rate_per_second is not KEEP,
        "rate_per_second": None if rate_per_second is KEEP else check_rate(rate_per_second)})


def of_configs(pool: ConnectionPool, scope: Scope, ids: Sequence[str]) -> dict[str, Health]:
    """Return the health of the given configs that `scope` may see, by config id."""
    return {row["config_id"]: Health(**row)
            for row in pool.rows("config_health", {**scope.params(), "ids": list(ids)})}


def held_due(pool: ConnectionPool, *, cap: int = 1_000_000) -> dict[str, int]:
    """Return the due deliveries withheld by a pause or a circuit, by health state."""
    return {row["state"]: row["deliveries"]
            for row in pool.rows("held_due_deliveries", {"cap": cap})}

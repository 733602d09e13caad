"""Endpoint health helpers for tests: stage a config's health row, claim, record results."""

from __future__ import annotations

from datetime import datetime

from db import deliveries
from db.deliveries import AttemptResult, Claimed
from db.health import HealthRules
from db.vocabulary import Verdict

RULES = HealthRules(cap=25, ramp=0.001, failures_to_open=3, min_volume=1000,
                    probe_interval=60, max_probe_interval=600)


def result(claimed: Claimed, status_code: int, sent_at: datetime | None = None) -> AttemptResult:
    """The result of one attempt answered `status_code` (200: success, 503: retry), sent at
    `sent_at` (unknown: in batch order)."""
    ok = status_code == 200
    return AttemptResult(
        delivery_id=claimed.id, token=claimed.token, attempt_number=claimed.attempt_count + 1,
        replay_generation=claimed.replay_generation, endpoint=claimed.endpoint,
        outcome="success" if ok else "http_error", status_code=status_code, duration_ms=3,
        response_excerpt="", error=None, next_status="succeeded" if ok else "pending",
        next_delay=None if ok else 0.0, last_error=None if ok else f"HTTP {status_code}",
        verdict=Verdict.SUCCESS if ok else Verdict.FAILURE, sent_at=sent_at)


def claim(make, limit: int = 50, rules: HealthRules = RULES, owner: str = "w") -> list[Claimed]:
    return deliveries.claim_due(make.pool, owner=owner, limit=limit, rules=rules)


def row(make, config_id: str) -> dict:
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT *, config_health_state(h) AS state FROM config_health h "
                       "WHERE config_id = %s", (config_id,))
        names = [column.name for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


def stage(make, config_id: str, **columns) -> None:
    """Overwrite columns of a config's health row (to stage a state for a test)."""
    assignments = ", ".join(f"{name} = %({name})s" for name in columns)
    with make.pool.transaction() as cursor:
        cursor.execute(f"UPDATE config_health SET {assignments} WHERE config_id = %(id)s",
                       {**columns, "id": config_id})


def events_for(make, config, count: int) -> list[int]:
    return [make.event(type=config.event_types[0], tenant_id=config.tenant_id)[1][0]
            for _ in range(count)]


def open_circuit(make, config) -> None:
    """Fail the config's attempts until its circuit opens."""
    for _ in range(RULES.failures_to_open):
        (claimed,) = claim(make, limit=1)
        deliveries.record_and_settle(make.pool, [result(claimed, 503)], RULES)

"""Return stale claims (workers that died mid-flight) to the queue, in bounded batches, and
keep the configs' in-flight counts true to the deliveries in flight."""

from __future__ import annotations

import logging
from collections import Counter

from db import deliveries, health
from db.health import HealthRules
from db.pool import ConnectionPool
from db.vocabulary import CircuitState, Status
from service.dispatch import circuit
from service.runtime.telemetry import Telemetry

log = logging.getLogger("webhooks.recovery")

RECOVERY_BATCH = 1000  # most claims recovered by one statement


def recover_stale_claims(pool: ConnectionPool, *, timeout: float, telemetry: Telemetry,
                         rules: HealthRules = deliveries.DEFAULT_RULES) -> int:
    """Recover every claim older than `timeout` seconds, freeing their slots, and correct any
    in-flight count or probe that disagrees with the deliveries in flight; return how many
    claims were recovered."""
    total = Counter()
    while True:
        handed = deliveries.recover_stale(pool, timeout=timeout, limit=RECOVERY_BATCH,
                                          rules=rules)
        total.update(m.status for m in handed.moved)
        circuit.report(handed.transitions, telemetry)
        if len(handed.moved) < RECOVERY_BATCH:
            break
    count = sum(total.values())
    if count:
        telemetry.recovered(count)
        for status, n in total.items():
            telemetry.transition(Status.DELIVERING, status, n)
        log.warning("recovered stale claims", extra={"recovered": count, **dict(total)})
    for correction in health.reconcile(pool):
        if correction.probe_lost:
            telemetry.circuit_transition(CircuitState.HALF_OPEN, CircuitState.OPEN)
        log.warning("endpoint health corrected to match the deliveries in flight", extra={
            "config_id": correction.config_id, "in_flight_counted": correction.counted,
            "in_flight": correction.in_flight, "probe_lost": correction.probe_lost})
    return count

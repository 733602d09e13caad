"""The endpoint-health rules from the settings, and the log line and metric of each change."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from db.health import NEVER, HealthRules, Transition
from db.vocabulary import CircuitState
from service.runtime.telemetry import Telemetry

log = logging.getLogger("webhooks.health")


def rules_from(settings) -> HealthRules:
    """Return the breaker thresholds and the default cap the settings ask for."""
    breaker = settings.circuit_failures > 0
    return HealthRules(
        cap=settings.endpoint_cap,
        ramp=settings.endpoint_ramp,
        failures_to_open=settings.circuit_failures if breaker else NEVER,
        failure_ratio=settings.circuit_failure_ratio,
        window=settings.circuit_window,
        min_volume=settings.circuit_min_volume if breaker else NEVER,
        probe_interval=settings.circuit_probe_interval,
        max_probe_interval=settings.circuit_max_probe_interval,
    )


def report(transitions: Iterable[Transition], telemetry: Telemetry) -> None:
    """Log and count each circuit transition."""
    for change in transitions:
        telemetry.circuit_transition(change.source, change.target)
        level = logging.WARNING if change.target == CircuitState.OPEN else logging.INFO
        log.log(level, f"circuit {change.source} -> {change.target}", extra={
            "config_id": change.config_id, "from": change.source, "to": change.target,
            "reason": change.reason, "consecutive_failures": change.consecutive_failures,
            "next_probe_at": change.next_probe_at})


def report_probe(config_id: str, delivery_id: int, telemetry: Telemetry) -> None:
    """Log and count a probe taken: the circuit went from open to half_open."""
    source, target = CircuitState.OPEN, CircuitState.HALF_OPEN
    telemetry.circuit_transition(source, target)
    log.info(f"circuit {source} -> {target}", extra={
        "config_id": config_id, "from": source, "to": target, "delivery_id": delivery_id,
        "reason": "probing the endpoint with one delivery"})

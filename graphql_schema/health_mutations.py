"""Mutations of a config's endpoint health: pause, resume, and reset the circuit breaker."""

from __future__ import annotations

import logging

import strawberry

from db import configs, health
from db.errors import NotFound
from db.vocabulary import CircuitState, HealthState, PortalCapability
from graphql_schema import arguments, portal_limits
from graphql_schema.access import operator_mutation
from graphql_schema.context import Info
from graphql_schema.types import Config

log = logging.getLogger("webhooks.health")


@strawberry.type(description="A config after a health change, and whether anything changed.")
class ConfigHealthChange:
    config: Config
    changed: bool = strawberry.field(
        description="False when the config was already in the asked state (a no-op).")
    message: str = strawberry.field(description="What happened, in words.")


def _apply(info: Info, id: strawberry.ID, change, reason: str | None, *, done: str,
           already: str, default_reason: str, sends: bool = True) -> ConfigHealthChange:
    """Run a health `change` of config `id`; one that `sends` (resume, reset) lets its
    deliveries go again, which a portal session may do only within its event types."""
    config_id = arguments.text(str(id), "id")
    if sends:
        portal_limits.check_config(info, config_id)
    why = arguments.text(reason, "reason") or default_reason
    scope = info.context.scope
    changed = change(info.context.pool, scope, config_id, reason=why,
                     actor=info.context.token_name)
    row = configs.get(info.context.pool, scope, config_id)
    if row is None:
        raise NotFound(f"config {arguments.shown(id)} not found")
    message = done if changed else already
    if changed:
        log.info(message, extra={"config_id": config_id, "reason": why,
                                 "actor": info.context.token_name,
                                 "tenant": info.context.tenant_uid})
    return ConfigHealthChange(config=Config.from_row(row), changed=changed, message=message)


@strawberry.type
class HealthMutations:
    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Pause a config: new events still create pending "
                                   "deliveries, nothing is attempted or cancelled, and the "
                                   "retry windows' clocks stop. Pausing a paused config is a "
                                   "no-op (`changed: false`).")
    def pause_config(self, info: Info, id: strawberry.ID,
                     reason: str | None = None) -> ConfigHealthChange:
        return _apply(info, id, health.pause, reason, done="config paused",
                      already="config was already paused; nothing changed",
                      default_reason="paused by an operator", sends=False)

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Resume a paused config; its backlog is released "
                                   "gradually (the in-flight cap ramps up from 1).")
    def resume_config(self, info: Info, id: strawberry.ID,
                      reason: str | None = None) -> ConfigHealthChange:
        return _apply(info, id, health.resume, reason, done="config resumed",
                      already="config was not paused; nothing changed",
                      default_reason="resumed by an operator")

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Close an open or half-open circuit now (the endpoint is "
                                   "known to be back); the backlog is released with the ramp.")
    def reset_circuit(self, info: Info, id: strawberry.ID,
                      reason: str | None = None) -> ConfigHealthChange:
        before = health.of_configs(info.context.pool, info.context.scope,
                                   [arguments.text(str(id), "id")])
        result = _apply(info, id, health.reset_circuit, reason, done="circuit closed",
                        already="circuit was closed; nothing changed",
                        default_reason="circuit reset by an operator")
        if result.changed:
            state = next(iter(before.values())).state if before else HealthState.OPEN
            source = CircuitState.HALF_OPEN if state == HealthState.HALF_OPEN else CircuitState.OPEN
            info.context.telemetry.circuit_transition(source, CircuitState.CLOSED)
        return result

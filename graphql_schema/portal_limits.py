"""What a portal session may do beyond its capabilities: the subscriptions its endpoints may
make (the event types it was given, when it was given any), the configs it may change or set
sending (those whose subscriptions stay within them), and the events it may publish (to its
own tenant, of a type it may subscribe to, with one of the catalog's examples of that type as
the payload). An API token has no such limits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from db import catalog, configs
from db.errors import NotFound
from graphql_schema.context import Info
from graphql_schema.errors import FORBIDDEN, api_error


def check_subscriptions(info: Info, subscriptions: Sequence[str] | None) -> None:
    """Refuse (FORBIDDEN) a subscription the caller's portal session does not cover."""
    allowed = info.context.allowed_event_types
    if allowed is None or not subscriptions:
        return
    for subscription in subscriptions:
        if not catalog.covers(allowed, subscription):
            raise api_error(FORBIDDEN, f"eventTypes: this portal session may subscribe to "
                                       f"{', '.join(allowed)} only, not to {subscription!r}")


def check_config(info: Info, config_id: str, subscriptions: Sequence[str] | None = None
                 ) -> None:
    """Refuse (FORBIDDEN) a portal session's change of the config `config_id` that leaves it
    subscribed beyond the session's event types: its new `subscriptions` when the change gives
    any, else those it has. A config the platform subscribed wider than the session's types
    may be stopped by the session (paused, deactivated, deleted), never pointed elsewhere,
    activated, resumed or given a new secret. An unknown config is left to the change
    (NOT_FOUND)."""
    allowed = info.context.allowed_event_types
    if allowed is None:
        return
    if subscriptions is not None:
        check_subscriptions(info, subscriptions)
        return
    config = configs.get(info.context.pool, info.context.scope, config_id)
    if config is None:
        return
    beyond = [s for s in config.event_types if not catalog.covers(allowed, s)]
    if beyond:
        raise api_error(FORBIDDEN, f"config {config_id} subscribes to "
                                   f"{', '.join(map(repr, beyond))}, beyond this portal "
                                   f"session's {', '.join(allowed)}: it may only stop it, or "
                                   "narrow its eventTypes")


def check_example(info: Info, event_type: str, payload: Any) -> None:
    """Refuse (FORBIDDEN) a portal session's publish unless its payload is one of the catalog's
    examples of a type it may subscribe to."""
    if info.context.capabilities is None:
        return
    check_subscriptions(info, [event_type])
    try:
        examples = catalog.get(info.context.pool, event_type).examples
    except NotFound:
        examples = []
    if payload not in (examples or []):
        raise api_error(FORBIDDEN, "a portal session sends only the catalog's examples: "
                                   f"the payload is not one of {event_type!r}'s examples")

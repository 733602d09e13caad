"""The audit trail: one log line per mutation saying who did what to which ids, and the result.

Lines go to the `webhooks.audit` logger with the caller's token name and role (never the
token) and the tenant it acts for (null: the whole platform), the mutation, the ids it named
or touched and its result (`ok` or the error code).
A mutation refused for want of a valid token or of the operator role leaves its line too
(`UNAUTHENTICATED`, with no name or role, or `FORBIDDEN`).
No input is logged beyond ids: no secret, endpoint or payload ever reaches the trail.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from graphql_schema.context import Info
from graphql_schema.errors import code_for

MAX_IDS = 100  # delivery or config ids listed in one line; the count says how many there were
MAX_ID_LENGTH = 200  # characters of an `id` argument kept (it is whatever the client sent)

log = logging.getLogger("webhooks.audit")


def audited(resolver: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a mutation's resolver so that each call leaves one audit line."""

    @functools.wraps(resolver)
    def run(*args: Any, **kwargs: Any) -> Any:
        info = kwargs["info"]
        try:
            result = resolver(*args, **kwargs)
        except Exception as error:
            record(info, kwargs.get("id"), None, code_for(error))
            raise
        record(info, kwargs.get("id"), result, "ok")
        return result

    return run


def record(info: Info, argument_id: Any, result: Any, outcome: str) -> None:
    """Log one mutation: who, what, which ids, and its result."""
    context = info.context
    ids = ids_of(result)
    if argument_id is not None:
        ids = {"id": str(argument_id)[:MAX_ID_LENGTH], **ids}
    write(info.field_name, context.token_name, context.role, ids, outcome,
          tenant=context.tenant_uid)


def refused(action: str, outcome: str) -> None:
    """Log a mutation refused before the schema ran, for a caller without a valid token."""
    write(action, None, None, {}, outcome)


def write(action: str, actor: str | None, role: str | None, ids: dict[str, Any],
          outcome: str, *, tenant: str | None = None) -> None:
    """Log one audit line (also for changes made outside the API, such as `webhooks tokens`);
    `tenant` is the uid of the tenant the actor's token acts for (None: the platform)."""
    log.info("audit", extra={"audit": action, "actor": actor, "role": role, "ids": ids,
                             "result": outcome, "tenant": tenant})


def ids_of(result: Any) -> dict[str, Any]:
    """Return the config, event and delivery ids (or the tenant uids) a mutation's result
    holds."""
    if isinstance(result, list) and all(hasattr(each, "uid") for each in result):
        uids = [each.uid for each in result]  # tenants created at once
        return {"tenant_uids": uids[:MAX_IDS], "tenant_count": len(uids)}
    if isinstance(result, list):  # configs created at once
        configs = [str(getattr(each, "config", each).id) for each in result]
        return {"config_ids": configs[:MAX_IDS], "config_count": len(configs)}
    ids: dict[str, Any] = {}
    config = getattr(result, "config", result)
    if hasattr(config, "event_types"):
        ids["config_id"] = str(config.id)
    if getattr(result, "event_id", None) is not None:
        ids["event_id"] = str(result.event_id)
    deliveries = [*getattr(result, "delivery_ids", ()), *getattr(result, "replayed", ()),
                  *getattr(result, "expedited", ())]
    if getattr(result, "delivery_id", None) is not None:
        deliveries.append(result.delivery_id)
    if deliveries:
        ids["delivery_ids"] = [str(id) for id in deliveries[:MAX_IDS]]
        ids["delivery_count"] = len(deliveries)
    return ids

"""Config filters at fan-out, and what they kept: which of a batch's events each filtered
config's filter rejects (decided here, in the ingest's transaction, before its statement),
and each config's count of the events its filter rejected.

Why the service decides and not the ingest statement itself (a jsonpath in SQL): measured in
`python -m bench catalog` and argued in docs/filters.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from db import event_filter
from db.catalog import subscription_patterns
from db.pool import ConnectionPool
from db.rows import as_dicts
from db.scope import Scope
from db.sql import QUERIES


class Event(Protocol):
    """What a filter needs of an event to be ingested (db.events.NewEvent has it)."""

    type: str
    tenant_id: int
    payload: str  # JSON text


@dataclass(frozen=True)
class Rejections:
    """The pairs of an event (its position in the batch, from 1) and a config whose filter
    rejected it, as the ingest statement takes them."""

    positions: list[int]
    config_ids: list[str]

    def params(self) -> dict[str, Any]:
        return {"filtered_positions": self.positions, "filtered_configs": self.config_ids}


def rejections(cursor: Any, events: Sequence[Event], patterns: Sequence[str]) -> Rejections:
    """In the caller's transaction, before `events` are ingested: share-lock the filtered
    configs they reach and return the pairs whose filter rejects the event (a payload is
    decoded once, and only when some filter looks at it)."""
    cursor.execute(QUERIES["filtered_subscribers"], {
        "tenant_ids": sorted({event.tenant_id for event in events}),
        "patterns": list(patterns)})
    filtered = as_dicts(cursor)
    positions: list[int] = []
    config_ids: list[str] = []
    if not filtered:
        return Rejections(positions, config_ids)
    for position, event in enumerate(events, start=1):
        reaching = set(subscription_patterns(event.type))
        payload: Any = _UNREAD
        for config in filtered:
            if config["tenant_id"] != event.tenant_id or reaching.isdisjoint(
                    config["event_types"]):
                continue
            if payload is _UNREAD:
                payload = json.loads(event.payload)
            if not _passes(config["filter"], payload):
                positions.append(position)
                config_ids.append(config["id"])
    return Rejections(positions, config_ids)


_UNREAD = object()


def _passes(text: str, payload: Any) -> bool:
    """Whether a stored filter lets an event through. A stored filter was checked when it was
    saved; one that a later version of the language can no longer read lets every event
    through (an event is never lost to it)."""
    try:
        checked = event_filter.compiled(text)
    except ValueError:
        return True
    return checked.matches(payload)


@dataclass(frozen=True)
class FilterCount:
    """The events a config's filter rejected since it was created, and when it last did."""

    filtered_out: int
    last_filtered_out_at: datetime | None


def counts(pool: ConnectionPool, scope: Scope, config_ids: Sequence[str]
           ) -> dict[str, FilterCount]:
    """Return each of `config_ids`' filtered-out count (zero when none was), if of `scope`."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["config_filter_counts"],
                       {**scope.params(), "ids": list(config_ids)})
        found = {row["config_id"]: FilterCount(int(row["filtered_out"]),
                                               row["last_filtered_out_at"])
                 for row in as_dicts(cursor)}
    return {id: found.get(id, FilterCount(0, None)) for id in config_ids}

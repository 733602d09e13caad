"""Operational events: the platform hears about its customers' endpoints.

The statements that disable a config, open or close its circuit, exhaust a delivery or make a
failed delivery hold its ordering key write an announcement to the outbox in the same
statement (migration 0033: triggers on the health history and on `deliveries.blocks_key`, and
a step of `record_and_settle`), when an operational tenant is named and the config is not
that tenant's own. A worker's relay takes announcements, publishes each as an event of the
operational tenant through the ordinary publish path (`events.publish_in`) and deletes them,
in one transaction. An announcement's event id is derived from its change, so it is published
once however often the relay's transaction is run.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db import catalog, events
from db.errors import Conflict, InvalidInput, NotFound
from db.operational_types import GROUP, TYPES
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.sql import QUERIES
from db.vocabulary import OperationalEvent

DASHBOARD = "/#"  # the dashboard's pages, on the web process: `/#/configs/<id>`


@dataclass(frozen=True)
class Announcement:
    """One change to announce, as the relay takes it from the outbox."""

    event_id: str
    type: OperationalEvent
    tenant_uid: str
    config_id: str
    config_name: str | None
    reason: str | None
    actor: str | None
    delivery: dict[str, Any] | None  # of delivery events: the delivery as the change left it
    occurred_at: datetime


def point_at(pool: ConnectionPool, uid: str) -> int:
    """Make the live tenant `uid` hear operational events from now on; return its id.
    NotFound when no live tenant has the uid."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["point_operational_events"], {"uid": uid})
        row = as_dict(cursor)
    if row is None:
        raise NotFound(f"no tenant has the uid {uid!r}")
    return row["tenant_id"]


def stop(pool: ConnectionPool) -> None:
    """Announce nothing from now on; drop the announcements not yet published."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["stop_operational_events"])


def register_types(pool: ConnectionPool) -> None:
    """Put the operational event types in the catalog as this code describes them: added when
    missing, given a new schema version when theirs differs (idempotent). Conflict when the
    catalog has a type of one of their names in another group (the platform's own)."""
    for kind, entry in TYPES.items():
        try:
            current = catalog.get(pool, kind)
        except NotFound:
            try:
                catalog.create(pool, name=kind, description=entry.description,
                               group_name=GROUP, examples=[entry.example], schema=entry.schema)
                continue
            except InvalidInput:  # another worker starting at once added it
                current = catalog.get(pool, kind)
        if current.group_name != GROUP:
            raise Conflict(f"the catalog has an event type {kind.value!r} of group "
                           f"{current.group_name!r}: operational events need that name in "
                           f"the group {GROUP!r}")
        if (current.description, current.examples, current.schema) != (
                entry.description, [entry.example], entry.schema):
            catalog.update(pool, kind, description=entry.description, examples=[entry.example],
                           schema=entry.schema, set_schema=current.schema != entry.schema)


def relay(pool: ConnectionPool, *, tenant_id: int, public_url: str | None, max_payload: int,
          strict: bool, limit: int) -> int:
    """Publish up to `limit` announcements as events of the tenant `tenant_id` and delete them,
    in one transaction; return how many. Raises what publishing raises (RateLimited when the
    tenant's publish rate is spent, InvalidInput when the catalog refuses one): then nothing
    is published and nothing deleted."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["take_operational_events"], {"limit": limit})
        taken = [as_type(Announcement, row, type=OperationalEvent(row["type"]))
                 for row in as_dicts(cursor)]
        if taken:
            events.publish_in(cursor, [
                events.new_event(a.event_id, a.type, payload(a, public_url),
                                 tenant_id=tenant_id, max_payload=max_payload,
                                 occurred_at=a.occurred_at, ordering_key=a.config_id)
                for a in taken], source="api", strict=strict)
    return len(taken)


def payload(announcement: Announcement, public_url: str | None) -> dict[str, Any]:
    """Return the payload of an announcement's event (its type's schema: db.operational_types);
    its link is absolute with `public_url`, else a path on the web process."""
    a = announcement
    body: dict[str, Any] = {
        "tenant": {"uid": a.tenant_uid},
        "config": {"id": a.config_id, "name": a.config_name},
        "reason": a.reason,
        "link": (public_url or "") + DASHBOARD + page_of(a),
        "occurredAt": a.occurred_at.isoformat(),
    }
    if a.delivery is None:  # a change of the config itself: who made it
        body["actor"] = a.actor
        return body
    d = a.delivery
    if a.type == OperationalEvent.ORDERING_KEY_BLOCKED:
        body["orderingKey"] = d["ordering_key"]
    body["delivery"] = {
        "id": str(d["id"]), "eventId": d["event_id"], "eventType": d["event_type"],
        "attempts": d["attempts"], "replayGeneration": d["replay_generation"],
        "lastStatusCode": d["last_status_code"], "orderingKey": d["ordering_key"],
        "sequence": d["sequence"],
    }
    return body


def page_of(announcement: Announcement) -> str:
    """Return the dashboard page of what an announcement is about: the delivery that ran out
    of budget, else the config (whose page lists the keys its failures hold)."""
    if announcement.type == OperationalEvent.DELIVERY_EXHAUSTED:
        return f"/deliveries/{announcement.delivery['id']}"
    return f"/configs/{urllib.parse.quote(announcement.config_id, safe='')}"

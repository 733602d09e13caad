"""Events and their fan-out: the one ingest path shared by the broker consumer and the API."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from db import catalog, config_filters
from db.catalog import subscription_patterns
from db.errors import InvalidInput, RateLimited
from db.event_keys import given_ordering_key
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.sql import QUERIES
from db.vocabulary import PoisonKind

MAX_ID_LENGTH = 255
MAX_TYPE_LENGTH = 255
UNRESOLVED_TENANT = 0  # the tenant_id of an event whose tenant uid was not looked up yet


@dataclass(frozen=True)
class NewEvent:
    """An event to store; `payload` is its JSON text.

    From a broker message it may also carry the message key and the producer's W3C trace
    context (`traceparent`, `tracestate`), which the event's delivery attempts continue. Its
    ordering key (what db.event_keys makes of the message key or of the API's `orderingKey`)
    goes to each of its deliveries.
    """

    id: str
    type: str
    payload: str
    tenant_id: int  # whose event it is: it reaches that tenant's configs only
    occurred_at: datetime | None = None
    # The uid a broker message named its tenant by, until the tenant is looked up (then
    # `tenant_id` is UNRESOLVED_TENANT, which ingest refuses).
    tenant_uid: str | None = None
    schema_version: int | None = None  # of its type's schema, its payload checked against
    key: bytes | None = None
    ordering_key: str | None = None
    trace_parent: str | None = None
    trace_state: str | None = None


@dataclass(frozen=True)
class IngestCounts:
    events_created: int
    deliveries_created: int
    filtered_out: int = 0  # pairs of a new event and a config whose filter rejected it
    # the position (from 1) of the event of each pair a filter rejected, stored before or not
    rejected_positions: tuple[int, ...] = ()


def encode_payload(payload: Any) -> str:
    """Return the compact JSON text stored for `payload`."""
    return json.dumps(payload, separators=(",", ":"), allow_nan=False)


def new_event(
    id: str, type: str, payload: Any, *, tenant_id: int, max_payload: int,
    occurred_at: datetime | None = None, ordering_key: str | None = None,
) -> NewEvent:
    """Validate an event's fields and return it, or raise InvalidInput saying what is wrong.

    `ordering_key` is the key as an API caller gave it, as text: the event keeps what
    db.event_keys makes of it.
    """
    if not isinstance(type, str) or not type.strip():
        raise InvalidInput("type: must be a non-empty string")
    if len(type) > MAX_TYPE_LENGTH:
        raise InvalidInput(f"type: longer than {MAX_TYPE_LENGTH} characters")
    if not isinstance(id, str) or not id.strip():
        raise InvalidInput("id: must be a non-empty string")
    if len(id) > MAX_ID_LENGTH:
        raise InvalidInput(f"id: longer than {MAX_ID_LENGTH} characters")
    if "\x00" in id or "\x00" in type:
        raise InvalidInput("id and type must not contain NUL characters")
    if not (_is_unicode(id) and _is_unicode(type)):
        raise InvalidInput("id and type must be valid Unicode (no lone surrogates)")
    try:
        text = encode_payload(payload)
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"payload: not representable as JSON ({error})") from None
    except RecursionError:
        raise InvalidInput("payload: nested too deeply") from None
    if len(text) > max_payload:
        raise InvalidInput(f"payload: {len(text)} bytes is over the limit of {max_payload} bytes")
    return NewEvent(id=id, type=type, payload=text, tenant_id=tenant_id,
                    occurred_at=occurred_at, ordering_key=given_ordering_key(ordering_key))


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def ingest(cursor: Any, events: Sequence[NewEvent], *, source: str) -> IngestCounts:
    """Store `events` and their deliveries within the caller's transaction: one per active
    subscribed config of the event's tenant whose filter, if it has one, lets it through."""
    if not events:
        return IngestCounts(0, 0)
    unresolved = [e.id for e in events if e.tenant_id == UNRESOLVED_TENANT]
    if unresolved:
        raise ValueError(f"events whose tenant was not looked up: {unresolved[:5]}")
    patterns = sorted({pattern for e in events for pattern in subscription_patterns(e.type)})
    rejected = config_filters.rejections(cursor, events, patterns)
    cursor.execute(
        QUERIES["ingest_events"],
        {
            **rejected.params(),
            "ids": [e.id for e in events],
            "tenant_ids": [e.tenant_id for e in events],
            "batch_tenants": sorted({e.tenant_id for e in events}),
            "types": [e.type for e in events],
            "patterns": patterns,
            "schema_versions": [e.schema_version for e in events],
            "payloads": [e.payload for e in events],
            "occurred_at": [e.occurred_at for e in events],
            "keys": [e.key for e in events],
            "ordering_keys": [e.ordering_key for e in events],
            "trace_parents": [e.trace_parent for e in events],
            "trace_states": [e.trace_state for e in events],
            "source": source,
        },
    )
    return as_type(IngestCounts, as_dict(cursor), rejected_positions=tuple(rejected.positions))


@dataclass(frozen=True)
class Waiting:
    """An event over its tenant's published events per second: it fits in `seconds`."""

    tenant_uid: str
    seconds: float


def take_publish_slots(cursor: Any, events: Sequence[NewEvent]) -> dict[int, Waiting]:
    """Take, within the caller's transaction, a slot of its tenant's publish rate for each of
    `events` that is new, in their order, as far as each rate allows now; return the index of
    each event that must wait (an event stored before, or of a tenant without a rate, never
    does).

    Run it first in the transaction that stores them: it locks the rate-limited tenants' rows
    (in id order), which come before every other row a publish locks.
    """
    if not events:
        return {}
    cursor.execute(QUERIES["take_publish_slots"], {"tenant_ids": [e.tenant_id for e in events],
                                                   "ids": [e.id for e in events]})
    return {row["index"]: Waiting(row["uid"], float(row["wait_seconds"]))
            for row in as_dicts(cursor)}


def refusal(waiting: dict[int, Waiting]) -> RateLimited:
    """Return the error of a publish refused for the tenants' rates `waiting` names: its
    retry_after is when all of them fit, rounded up to the millisecond."""
    uids = ", ".join(repr(uid) for uid in sorted({w.tenant_uid for w in waiting.values()}))
    seconds = math.ceil(max(w.seconds for w in waiting.values()) * 1000) / 1000
    return RateLimited(f"over the events-per-second limit of tenant {uids}: nothing stored; "
                       f"retry in {seconds:g} s", retry_after=seconds)


@dataclass(frozen=True)
class Published:
    """The deliveries of a published event; `duplicate` when its id was already stored (then
    the event stored first, with its payload, is the one delivered)."""

    delivery_ids: list[int]
    duplicate: bool
    filtered_out: int = 0  # its tenant's configs whose filter rejected it (none if duplicate)


@dataclass(frozen=True)
class Refusal:
    """An event the catalog refuses: its place among those checked, and why."""

    index: int
    reason: str
    kind: PoisonKind  # SCHEMA_MISMATCH or UNKNOWN_TYPE


def check_against_catalog(cursor: Any, events: Sequence[NewEvent], *, strict: bool
                          ) -> tuple[list[NewEvent], list[Refusal]]:
    """In the caller's transaction, check events against the catalog: a payload must satisfy
    its type's current schema (each event then says which version it was checked against),
    and with `strict` its type must be in the catalog. Return the events that pass, and why
    the others do not."""
    found = catalog.checked_types(cursor, [event.type for event in events])
    passed, refused = [], []
    known: list[str] | None = None
    for index, event in enumerate(events):
        entry = found.get(event.type)
        if entry is None:
            if not strict:
                passed.append(event)
                continue
            known = catalog.names_in(cursor) if known is None else known
            refused.append(Refusal(index, catalog.unknown_type(event.type, known),
                                   PoisonKind.UNKNOWN_TYPE))
            continue
        checked, schema_text = entry
        reason = (None if schema_text is None else catalog.violation(
            schema_text, event.type, checked.schema_version, json.loads(event.payload)))
        if reason is None:
            passed.append(replace(event, schema_version=checked.schema_version or None))
        else:
            refused.append(Refusal(index, reason, PoisonKind.SCHEMA_MISMATCH))
    return passed, refused


def publish(pool: ConnectionPool, event: NewEvent, *, source: str = "api",
            strict: bool = False) -> Published:
    """Store one event with its deliveries; return them (idempotent on the tenant and id)."""
    (published,) = publish_all(pool, [event], source=source, strict=strict)
    return published


def publish_all(pool: ConnectionPool, events: Sequence[NewEvent], *,
                source: str = "api", strict: bool = False) -> list[Published]:
    """Store events (of one or several tenants) with their deliveries in one transaction;
    return each one's deliveries, in order (idempotent on each event's tenant and id).
    InvalidInput, storing nothing, when the catalog refuses one (its schema, or `strict` and
    a type it does not have).

    All or nothing: when a tenant's rate cannot take its new event now, nothing is stored and
    RateLimited says when the call would fit."""
    with pool.transaction() as cursor:
        return publish_in(cursor, events, source=source, strict=strict)


def publish_in(cursor: Any, events: Sequence[NewEvent], *, source: str,
               strict: bool) -> list[Published]:
    """Publish as `publish_all` does, within the caller's transaction (which the errors of
    `publish_all` must then roll back)."""
    events, refused = check_against_catalog(cursor, events, strict=strict)
    if refused:
        raise InvalidInput(refused[0].reason)
    waiting = take_publish_slots(cursor, events)
    if waiting:
        raise refusal(waiting)
    counts = ingest(cursor, events, source=source)
    published = []
    for position, event in enumerate(events, start=1):
        cursor.execute(QUERIES["deliveries_of_event"],
                       {"tenant_id": event.tenant_id, "event_id": event.id})
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(QUERIES["event_created_now"],
                       {"tenant_id": event.tenant_id, "event_id": event.id})
        duplicate = not cursor.fetchone()[0]
        published.append(Published(ids, duplicate=duplicate, filtered_out=0 if duplicate
                                   else counts.rejected_positions.count(position)))
    return published

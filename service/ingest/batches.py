"""Store one polled batch: its events with their fan-out and its poison messages, together.

The events (db.events.ingest, the path of `publishEvent`) and the rejected messages
(db.rejected.store) go in one transaction. When the database refuses a value, the batch's
events are stored in halves until the culprit stands alone; it is quarantined as
`unstorable` and the rest is stored. An event id and a rejected message's position are
stored at most once, so storing a batch again creates nothing new.

An event over its tenant's events per second is not stored: it waits, and the batch says
which messages wait and for how long (service.ingest.rate_holds holds their partitions).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from db import events, rejected, tenants
from db.errors import InvalidData
from db.events import UNRESOLVED_TENANT, IngestCounts, NewEvent
from db.pool import ConnectionPool
from db.rejected import Rejection
from db.scope import DEFAULT_TENANT_UID
from db.vocabulary import PoisonKind
from service.ingest.envelope import Poison, parse
from service.ingest.rate_holds import in_turns
from service.policy import safe_text
from service.policy.halves import store_in_halves
from service.runtime.telemetry import Telemetry

if TYPE_CHECKING:
    from kafka.consumer.fetcher import ConsumerRecord

log = logging.getLogger("webhooks.consumer")

MAX_REASON_LENGTH = 1000  # bytes of an error message kept as a rejection's reason


@dataclass
class Progress:
    """What one consumer did since it started (for logs, tests and the benchmark)."""

    batches: int = 0
    messages: int = 0
    events: int = 0
    deliveries: int = 0
    rejected: int = 0


Good = tuple["ConsumerRecord", NewEvent]
Waiting = list[tuple["ConsumerRecord", float]]  # messages not stored, and seconds to wait


def store_batch(pool: ConnectionPool, batch: Sequence[ConsumerRecord], *, max_payload: int,
                telemetry: Telemetry, progress: Progress, create_tenants: bool,
                strict_event_types: bool = False) -> Waiting:
    """Store a batch's events and rejections, all or (on a data error) each on its own; return
    the messages whose events wait for their tenants' rates, with how long.

    The tenants the batch's messages name are looked up at once; a message for a tenant that
    does not exist (or is deleted) is rejected, replayable once it does, unless
    `create_tenants` creates it. So is one the catalog refuses: a payload that fails its
    type's schema, or (with `strict_event_types`) a type the catalog does not have."""
    parsed: list[tuple[ConsumerRecord, NewEvent]] = []
    poisons: list[tuple[ConsumerRecord, Poison]] = []
    for record in batch:
        try:
            parsed.append((record, _parse(record, max_payload)))
        except Poison as poison:
            poisons.append((record, poison))
    goods, unknown = _with_tenants(pool, parsed, create_tenants=create_tenants)
    poisons += unknown
    goods, refused = _checked(pool, goods, strict=strict_event_types)
    poisons += refused
    try:
        with pool.transaction() as cursor:
            counts, waiting = _store_events(cursor, goods)
            stored = rejected.store(cursor, [_rejection(r, p) for r, p in poisons])
    except InvalidData:
        counts, waiting, culprits = _isolate(pool, goods)
        poisons += [(record, Poison(PoisonKind.UNSTORABLE, str(error)))
                    for record, error in culprits]
        with pool.transaction() as cursor:
            stored = rejected.store(cursor, [_rejection(r, p) for r, p in poisons])
    kinds = {_position(record): poison.kind for record, poison in poisons}
    _account(telemetry, progress, len(batch), counts, stored, kinds)
    return waiting


def _store_events(cursor: Any, goods: Sequence[Good]) -> tuple[IngestCounts, Waiting]:
    """Store, within the caller's transaction, the events of `goods` their tenants' rates
    allow now (their slots taken in turns across partitions), in the batch's order; return
    the others with how long they wait."""
    turns = in_turns([(record.topic, record.partition) for record, _ in goods])
    slots = events.take_publish_slots(cursor, [goods[index][1] for index in turns])
    waits = {turns[turn]: waiting.seconds for turn, waiting in slots.items()}
    counts = events.ingest(cursor, [event for index, (_, event) in enumerate(goods)
                                    if index not in waits], source="kafka")
    return counts, [(goods[index][0], seconds) for index, seconds in sorted(waits.items())]


def _with_tenants(pool: ConnectionPool, parsed: list[tuple[ConsumerRecord, NewEvent]], *,
                  create_tenants: bool
                  ) -> tuple[list[tuple[ConsumerRecord, NewEvent]],
                             list[tuple[ConsumerRecord, Poison]]]:
    """Return the events whose tenant exists, with its id, and the others as poison."""
    unresolved = [(record, event) for record, event in parsed
                  if event.tenant_id == UNRESOLVED_TENANT]
    goods = [(record, event) for record, event in parsed if event.tenant_id != UNRESOLVED_TENANT]
    uids = sorted({event.tenant_uid or DEFAULT_TENANT_UID for _, event in unresolved})
    ids = tenants.ids_of_uids(pool, uids, create_missing=create_tenants) if uids else {}
    unknown = []
    for record, event in unresolved:
        tenant_id = ids.get(event.tenant_uid or DEFAULT_TENANT_UID)
        if tenant_id is None:
            unknown.append((record, Poison(PoisonKind.UNKNOWN_TENANT,
                                           f'unknown tenant "{event.tenant_uid}"',
                                           tenant_uid=event.tenant_uid)))
        else:
            goods.append((record, replace(event, tenant_id=tenant_id)))
    return goods, unknown


def _checked(pool: ConnectionPool, goods: list[tuple[ConsumerRecord, NewEvent]], *,
             strict: bool) -> tuple[list[tuple[ConsumerRecord, NewEvent]],
                                    list[tuple[ConsumerRecord, Poison]]]:
    """Return the events the catalog lets through (each with the schema version it was checked
    against), and the others as poison."""
    if not goods:
        return [], []
    with pool.transaction() as cursor:
        passed, refused = events.check_against_catalog(
            cursor, [event for _, event in goods], strict=strict)
    refused_at = {refusal.index for refusal in refused}
    records = [record for index, (record, _) in enumerate(goods) if index not in refused_at]
    return (list(zip(records, passed, strict=True)),
            [(goods[r.index][0], Poison(r.kind, r.reason)) for r in refused])


def _parse(record: ConsumerRecord, max_payload: int) -> NewEvent:
    try:
        return parse(record.value, topic=record.topic, partition=record.partition,
                     offset=record.offset, max_payload=max_payload,
                     timestamp_ms=record.timestamp, key=record.key, headers=record.headers)
    except Poison:
        raise
    except Exception as error:  # a case the envelope rules missed: keep it, don't stall
        log.exception("reading a message failed", extra=dict(
            zip(("topic", "partition", "offset"), _position(record), strict=True)))
        raise Poison(PoisonKind.UNREADABLE, f"{type(error).__name__}: {error}") from error


def _isolate(pool: ConnectionPool, goods: list[Good]
             ) -> tuple[IngestCounts, Waiting, list[tuple[ConsumerRecord, Exception]]]:
    """Store `goods` in halves until each value the database refuses stands alone."""

    def store(part: Sequence[Good]):
        with pool.transaction() as cursor:
            return *_store_events(cursor, part), []

    parts = store_in_halves(goods, store, refused=(InvalidData,),
                            alone=lambda good, error: (IngestCounts(0, 0), [],
                                                       [(good[0], error)]))
    return (IngestCounts(sum(counts.events_created for counts, _, _ in parts),
                         sum(counts.deliveries_created for counts, _, _ in parts),
                         sum(counts.filtered_out for counts, _, _ in parts)),
            [waiting for _, waits, _ in parts for waiting in waits],
            [culprit for _, _, culprits in parts for culprit in culprits])


def _account(telemetry: Telemetry, progress: Progress, messages: int, counts: IngestCounts,
             stored: list[Rejection], kinds: dict[tuple[str, int, int], str]) -> None:
    progress.batches += 1
    progress.messages += messages
    progress.events += counts.events_created
    progress.deliveries += counts.deliveries_created
    progress.rejected += len(stored)
    telemetry.ingested("kafka", counts.events_created)
    telemetry.filtered_out(counts.filtered_out)
    for rejection in stored:
        telemetry.rejected(kinds[rejection.topic, rejection.partition, rejection.offset])
        log.warning("message rejected", extra={
            "topic": rejection.topic, "partition": rejection.partition,
            "offset": rejection.offset, "reason": rejection.reason,
            "bytes": None if rejection.raw is None else len(rejection.raw)})


def _rejection(record: ConsumerRecord, poison: Poison) -> Rejection:
    # Error texts may quote what they refused (a lone surrogate, a NUL): keep them storable.
    reason = safe_text.from_text(poison.reason, MAX_REASON_LENGTH)
    return Rejection(record.topic, record.partition, record.offset, reason, record.value,
                     key=record.key, headers=list(record.headers or ()),
                     tenant_uid=poison.tenant_uid)


def _position(record: ConsumerRecord) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset

"""Ingesting rejected broker messages after all: once the tenant a message named exists (or
whatever refused it was fixed), one message or every message that named a tenant is read
again as the consumer reads it, and ingested; platform-wide operator tokens only."""

from __future__ import annotations

import dataclasses

import strawberry

from db import events, rejected, tenants
from db.errors import InvalidInput, NotFound
from db.events import UNRESOLVED_TENANT
from db.scope import DEFAULT_TENANT_UID
from graphql_schema import arguments
from graphql_schema.access import operator_mutation
from graphql_schema.context import Info

MAX_REPLAYED = 1000  # rejected messages one call ingests at most


@strawberry.type(description="A rejected message ingested after all.")
class ReplayedMessage:
    rejected_event_id: strawberry.ID
    event_id: str
    tenant: str = strawberry.field(description="The uid of the tenant it went to.")


@strawberry.type(description="A rejected message that still cannot be an event, and why.")
class StillRejected:
    rejected_event_id: strawberry.ID
    reason: str


@strawberry.type
class RejectedReplayResult:
    replayed: list[ReplayedMessage]
    still_rejected: list[StillRejected]


def _read_again(info: Info, found: list[rejected.RejectedEvent]) -> tuple[list, list]:
    """Read the messages `found` again and look their tenants up; return those that now make
    events (each with its event and its tenant's uid) and those that still cannot."""
    read = info.context.read_rejected
    if read is None:
        raise InvalidInput("replaying rejected messages is not available here")
    good, still = [], []
    for message in found:
        try:
            good.append((message, read(message)))
        except InvalidInput as error:
            still.append(StillRejected(rejected_event_id=strawberry.ID(str(message.id)),
                                       reason=str(error)))
    uids = sorted({event.tenant_uid or DEFAULT_TENANT_UID for _, event in good})
    ids = tenants.ids_of_uids(info.context.pool, uids,
                              create_missing=info.context.create_tenants_on_publish)
    ready = []
    for message, event in good:
        uid = event.tenant_uid or DEFAULT_TENANT_UID
        if event.tenant_id == UNRESOLVED_TENANT and uid not in ids:
            still.append(StillRejected(rejected_event_id=strawberry.ID(str(message.id)),
                                       reason=f'unknown tenant "{uid}"'))
        else:
            ready.append((message, dataclasses.replace(event, tenant_id=ids[uid]), uid))
    return ready, still


@strawberry.type
class RejectedReplayMutations:
    @operator_mutation(platform=True,
                       description="Ingest one rejected broker message after all, read again "
                                   "as it was sent (its tenant may exist now); it is marked "
                                   "replayed. One that still cannot be an event stays, with "
                                   "the reason.")
    def replay_rejected_event(self, info: Info, id: strawberry.ID) -> RejectedReplayResult:
        number = arguments.delivery_id(id)
        return _run(info, ids=[number])

    @operator_mutation(platform=True,
                       description=f"Ingest after all, oldest first, up to `first` (1 to "
                                   f"{MAX_REPLAYED}) of the rejected broker messages that "
                                   "named the tenant `tenant` (created since).")
    def replay_rejected_events(self, info: Info, tenant: str,
                               first: int = MAX_REPLAYED) -> RejectedReplayResult:
        if not 1 <= first <= MAX_REPLAYED:
            raise InvalidInput(f"first: must be between 1 and {MAX_REPLAYED}")
        return _run(info, tenant_uid=arguments.text(tenant, "tenant"), limit=first)


def _run(info: Info, *, ids: list[int] | None = None, tenant_uid: str | None = None,
         limit: int = 1) -> RejectedReplayResult:
    with info.context.pool.transaction() as cursor:
        found = rejected.locked_for_replay(cursor, ids=ids, tenant_uid=tenant_uid, limit=limit)
        if ids is not None and not found:
            raise NotFound(f"rejected event {ids[0]} not found (or replayed already)")
        ready, still = _read_again(info, found)
        passed, refused = events.check_against_catalog(
            cursor, [event for _, event, _ in ready], strict=info.context.strict_event_types)
        refused_at = {refusal.index: refusal.reason for refusal in refused}
        still += [StillRejected(rejected_event_id=strawberry.ID(str(message.id)),
                                reason=refused_at[index])
                  for index, (message, _, _) in enumerate(ready) if index in refused_at]
        ready = [(message, event, uid) for (message, _, uid), event in zip(
            [r for index, r in enumerate(ready) if index not in refused_at], passed,
            strict=True)]
        counts = events.ingest(cursor, [event for _, event, _ in ready], source="kafka")
        rejected.mark_replayed(cursor, [message.id for message, _, _ in ready])
    info.context.telemetry.ingested("kafka", len(ready))
    info.context.telemetry.filtered_out(counts.filtered_out)
    return RejectedReplayResult(
        replayed=[ReplayedMessage(rejected_event_id=strawberry.ID(str(message.id)),
                                  event_id=event.id, tenant=uid)
                  for message, event, uid in ready],
        still_rejected=still)

"""Mutations: publish an event, plus those of configs, their health, replays and tenants,
merged into one type."""

from __future__ import annotations

import dataclasses
import uuid

import strawberry
from strawberry.scalars import JSON
from strawberry.tools import merge_types

from db import event_keys, events, tenants
from db.errors import InvalidInput
from db.tenants import Tenant
from db.vocabulary import PortalCapability
from graphql_schema import portal_limits, tenancy
from graphql_schema.access import operator_mutation
from graphql_schema.catalog_api import CatalogMutations
from graphql_schema.config_mutations import ConfigMutations
from graphql_schema.context import Info
from graphql_schema.health_mutations import HealthMutations
from graphql_schema.portal_api import PortalMutations
from graphql_schema.rejected_replay import RejectedReplayMutations
from graphql_schema.replay_mutations import ReplayMutations
from graphql_schema.tenant_api import TenantMutations

MAX_BROADCAST = 1000  # tenants one publish may reach


@strawberry.input
class PublishEventInput:
    type: str
    tenant: str | None = strawberry.field(
        default=None, description="The uid of the tenant whose configs receive it; omitted: "
                                  "the token's own tenant, or `default` for a platform-wide "
                                  "token.")
    tenants: list[str] | None = strawberry.field(
        default=None, description=f"Broadcast: the uids of up to {MAX_BROADCAST} tenants, each "
                                  "of which gets the event (under the same id), in one "
                                  "transaction. Not with `tenant`.")
    payload: JSON = strawberry.field(description="Any JSON; sent to subscribers as `data`.")
    id: str | None = strawberry.field(
        default=None,
        description="Idempotency: an id published before returns its deliveries and "
                    "creates nothing. Generated when omitted.")
    ordering_key: str | None = strawberry.field(
        default=None,
        description=f"The event's ordering key, as a Kafka message key gives one (empty: "
                    f"none): text of at most {event_keys.MAX_ORDERING_KEY_LENGTH} characters "
                    "without NUL is kept as it is; any other text (longer, with NUL, or "
                    f"starting with `{event_keys.ENCODED_PREFIX}` or "
                    f"`{event_keys.DIGEST_PREFIX}`) is kept encoded, as the deliveries' "
                    "`orderingKey` shows. Shown on its deliveries and filterable.")


@strawberry.type(description="What one tenant got of a published event.")
class TenantPublication:
    tenant: str = strawberry.field(description="The tenant's uid.")
    delivery_ids: list[strawberry.ID]
    duplicate: bool


@strawberry.type
class PublishedEvent:
    event_id: str
    delivery_ids: list[strawberry.ID] = strawberry.field(
        description="One delivery per active config (of its tenant, or tenants) subscribed to "
                    "the event's type.")
    duplicate: bool = strawberry.field(
        description="True when an event with this id was already stored (for every tenant it "
                    "went to): nothing new was created, and the first payload, not this one, "
                    "is the one delivered.")
    tenants: list[TenantPublication] = strawberry.field(
        description="What each tenant got, in the order asked for.")


def _recipients(info: Info, given: PublishEventInput) -> list[Tenant]:
    """Return the live tenants an event goes to: those named (created first where the
    settings say so), else the caller's own or `default`."""
    if given.tenants is None:
        uids = [given.tenant]
    elif given.tenant is not None:
        raise InvalidInput("give tenant or tenants, not both")
    elif not 1 <= len(given.tenants) <= MAX_BROADCAST:
        raise InvalidInput(f"tenants: give 1 to {MAX_BROADCAST} uids")
    else:
        uids = list(dict.fromkeys(given.tenants))
    if info.context.create_tenants_on_publish and info.context.scope.is_platform:
        tenants.ids_of_uids(info.context.pool, [u for u in uids if u is not None],
                            create_missing=True)
    tenancy.look_up(info, uids)
    return [tenancy.owner(info, uid) for uid in uids]


@strawberry.type
class EventMutations:
    @operator_mutation(capability=PortalCapability.SEND_EXAMPLE,
                       description="Store an event and one delivery per subscribed config of "
                                   "its tenant (or of each of its tenants). Over a tenant's "
                                   "`eventsPerSecond`: RATE_LIMITED (with `retryAfter`, "
                                   "HTTP 429), and nothing is stored. A portal session "
                                   "publishes only the catalog's examples of the types it "
                                   "may subscribe to.")
    def publish_event(self, info: Info, input: PublishEventInput) -> PublishedEvent:
        recipients = _recipients(info, input)
        portal_limits.check_example(info, input.type, input.payload)
        event = events.new_event(input.id or f"evt_{uuid.uuid4().hex}", input.type,
                                 input.payload, tenant_id=recipients[0].id,
                                 max_payload=info.context.max_payload,
                                 ordering_key=input.ordering_key)
        batch = [dataclasses.replace(event, tenant_id=tenant.id) for tenant in recipients]
        published = events.publish_all(info.context.pool, batch, source="api",
                                       strict=info.context.strict_event_types)
        info.context.telemetry.ingested("api", sum(not p.duplicate for p in published))
        info.context.telemetry.filtered_out(sum(p.filtered_out for p in published))
        return PublishedEvent(
            event_id=event.id, duplicate=all(p.duplicate for p in published),
            delivery_ids=[strawberry.ID(str(i)) for p in published for i in p.delivery_ids],
            tenants=[TenantPublication(tenant=tenant.uid, duplicate=p.duplicate,
                                       delivery_ids=[strawberry.ID(str(i))
                                                     for i in p.delivery_ids])
                     for tenant, p in zip(recipients, published, strict=True)])


Mutation = merge_types("Mutation", (ConfigMutations, EventMutations, HealthMutations,
                                   ReplayMutations, TenantMutations, RejectedReplayMutations,
                                   CatalogMutations, PortalMutations))

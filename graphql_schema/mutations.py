"""Mutations: publish an event, plus those of configs, their health and replays, merged into
one type."""

from __future__ import annotations

import uuid

import strawberry
from strawberry.scalars import JSON
from strawberry.tools import merge_types

from db import event_keys, events
from graphql_schema.access import operator_mutation
from graphql_schema.config_mutations import ConfigMutations
from graphql_schema.context import Info
from graphql_schema.health_mutations import HealthMutations
from graphql_schema.replay_mutations import ReplayMutations


@strawberry.input
class PublishEventInput:
    type: str
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


@strawberry.type
class PublishedEvent:
    event_id: str
    delivery_ids: list[strawberry.ID] = strawberry.field(
        description="One delivery per active config subscribed to the event's type.")
    duplicate: bool = strawberry.field(
        description="True when an event with this id was already stored: nothing new was "
                    "created, and the first payload, not this one, is the one delivered.")


@strawberry.type
class EventMutations:
    @operator_mutation(description="Store an event and one delivery per subscribed config.")
    def publish_event(self, info: Info, input: PublishEventInput) -> PublishedEvent:
        event = events.new_event(input.id or f"evt_{uuid.uuid4().hex}", input.type,
                                 input.payload, max_payload=info.context.max_payload,
                                 ordering_key=input.ordering_key)
        published = events.publish(info.context.pool, event, source="api")
        info.context.telemetry.ingested("api", int(not published.duplicate))
        return PublishedEvent(
            event_id=event.id, duplicate=published.duplicate,
            delivery_ids=[strawberry.ID(str(i)) for i in published.delivery_ids])


Mutation = merge_types("Mutation",
                       (ConfigMutations, EventMutations, HealthMutations, ReplayMutations))

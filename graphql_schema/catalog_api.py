"""The catalog of event types through the API: every token reads it (it is the platform's,
the same for every tenant); platform-wide operator tokens change it. Also the strict mode's
check of a config's subscriptions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from db import catalog
from db.catalog import EventType as EventTypeRow
from db.errors import InvalidInput
from graphql_schema import arguments
from graphql_schema.access import operator_mutation
from graphql_schema.connections import PageInfo, connection, page_size
from graphql_schema.context import Info


@strawberry.type(description="An event type of the catalog, the same for every tenant.")
class EventType:
    name: str
    description: str
    group_name: str | None
    examples: JSON = strawberry.field(description="Example payloads (a list).")
    schema_version: int = strawberry.field(
        description="The version of its schema payloads are checked against; 0: no schema.")
    deprecated: bool = strawberry.field(
        description="Still delivered; its requests carry `webhook-deprecated: true`.")
    deprecated_reason: str | None
    created_at: datetime
    updated_at: datetime
    current_schema: strawberry.Private[object] = None

    @strawberry.field(description="Its JSON Schema (draft 2020-12): the current version, or "
                                  "an earlier one (`version`); null without one.")
    def schema(self, info: Info, version: int | None = None) -> JSON | None:
        if version is None or version == self.schema_version:
            return self.current_schema
        if not 1 <= version < self.schema_version + 1:
            raise InvalidInput(f"version: {self.name!r} has versions 1 to "
                               f"{self.schema_version}")
        return catalog.schema_of(info.context.pool, self.name, version)

    @classmethod
    def from_row(cls, row: EventTypeRow) -> EventType:
        return cls(name=row.name, description=row.description, group_name=row.group_name,
                   examples=row.examples, schema_version=row.schema_version,
                   deprecated=row.deprecated_at is not None,
                   deprecated_reason=row.deprecated_reason, created_at=row.created_at,
                   updated_at=row.updated_at, current_schema=row.schema)


@strawberry.type
class EventTypeEdge:
    cursor: str
    node: EventType


@strawberry.type(description="Event types, by name.")
class EventTypeConnection:
    edges: list[EventTypeEdge]
    page_info: PageInfo


@strawberry.input(description="Every given field must match.")
class EventTypeFilter:
    name_contains: str | None = None
    group: str | None = None
    include_deprecated: bool = False


@strawberry.input
class CreateEventTypeInput:
    name: str = strawberry.field(description="Dotted words, e.g. `invoice.paid`.")
    description: str = ""
    schema: JSON | None = strawberry.field(
        default=None, description="A JSON Schema (draft 2020-12) every payload must satisfy.")
    examples: JSON | None = strawberry.field(
        default=None, description="Example payloads (a list); each must satisfy the schema.")
    group_name: str | None = None


@strawberry.input(description="Omitted fields keep their value; a new schema is a new "
                              "version (null: none from now on).")
class UpdateEventTypeInput:
    description: str | None = strawberry.UNSET
    schema: JSON | None = strawberry.UNSET
    examples: JSON | None = strawberry.UNSET
    group_name: str | None = strawberry.UNSET


def _given(value):
    return None if value is strawberry.UNSET else value


@strawberry.type
class CatalogQueries:
    @strawberry.field(description="The catalog's event types by name; page with `first` (1 to "
                                  "1000) and `after`.")
    def event_types(self, info: Info, filter: EventTypeFilter | None = None,
                    first: int | None = 100, after: str | None = None) -> EventTypeConnection:
        limit = page_size(first)
        given = filter or EventTypeFilter()
        rows = catalog.page(info.context.pool, catalog.CatalogFilter(
            name_contains=given.name_contains, group=given.group,
            include_deprecated=given.include_deprecated), limit=limit + 1,
            after=arguments.text(after, "after"))
        return connection(EventTypeConnection, EventTypeEdge, rows, limit,
                          lambda row: row.name, EventType.from_row,
                          from_cursor=after is not None)

    @strawberry.field(description="One event type by name; NOT_FOUND when the catalog has "
                                  "none of that name.")
    def event_type(self, info: Info, name: str) -> EventType:
        return EventType.from_row(catalog.get(info.context.pool, arguments.text(name, "name")))


@strawberry.type
class CatalogMutations:
    @operator_mutation(platform=True, description="Add an event type to the catalog.")
    def create_event_type(self, info: Info, input: CreateEventTypeInput) -> EventType:
        return EventType.from_row(catalog.create(
            info.context.pool, name=input.name, description=input.description,
            group_name=arguments.text(input.group_name, "groupName"),
            examples=input.examples, schema=input.schema))

    @operator_mutation(platform=True,
                       description="Change an event type; a new schema is its next version, "
                                   "the earlier ones stay readable.")
    def update_event_type(self, info: Info, name: str,
                          input: UpdateEventTypeInput) -> EventType:
        return EventType.from_row(catalog.update(
            info.context.pool, arguments.text(name, "name"),
            description=_given(input.description), group_name=_given(input.group_name),
            set_group=input.group_name is not strawberry.UNSET,
            examples=_given(input.examples), schema=_given(input.schema),
            set_schema=input.schema is not strawberry.UNSET))

    @operator_mutation(platform=True,
                       description="Deprecate an event type: it is still delivered, its "
                                   "requests carry `webhook-deprecated: true`.")
    def deprecate_event_type(self, info: Info, name: str, reason: str) -> EventType:
        return EventType.from_row(catalog.deprecate(info.context.pool,
                                                    arguments.text(name, "name"),
                                                    reason=arguments.text(reason, "reason")))


def check_subscriptions(info: Info, subscriptions: Sequence[str] | None) -> None:
    """In strict mode, refuse subscriptions of types the catalog does not have (a pattern must
    reach at least one of its types), naming the close ones."""
    if not info.context.strict_event_types or not subscriptions:
        return
    known = catalog.names(info.context.pool)
    for subscription in subscriptions:
        if subscription == catalog.WILDCARD:
            continue
        if catalog.is_pattern(subscription):
            prefix = subscription[:-1]
            if not any(name.startswith(prefix) for name in known):
                raise InvalidInput(f"eventTypes: {subscription!r} reaches no event type of the "
                                   "catalog (the catalog is strict)")
        elif subscription not in known:
            raise InvalidInput(f"eventTypes: {catalog.unknown_type(subscription, known)}")

"""Read-only queries: deliveries, configs, stats and rejected broker messages."""

from __future__ import annotations

from datetime import datetime

import strawberry

from db import configs, inspection, rejected
from db.errors import NotFound
from graphql_schema import arguments, cursors
from graphql_schema.connections import (
    DEFAULT_PAGE,
    ConfigConnection,
    ConfigEdge,
    DeliveryConnection,
    DeliveryEdge,
    RejectedEventConnection,
    RejectedEventEdge,
    connection,
    page_size,
)
from graphql_schema.context import Info
from graphql_schema.types import (
    Config,
    Delivery,
    DeliveryStatus,
    DeliverySummary,
    RejectedEvent,
    Stats,
    StatusCount,
)


@strawberry.input(description="Every given field must match; omitted (or null) fields match all.")
class DeliveryFilter:
    config_id: strawberry.ID | None = None
    status: list[DeliveryStatus] | None = strawberry.field(
        default=None, description="Any of these statuses (an empty list matches all).")
    event_type: str | None = None
    event_id: str | None = None
    created_after: datetime | None = strawberry.field(
        default=None, description="RFC 3339; inclusive.")
    created_before: datetime | None = strawberry.field(
        default=None, description="RFC 3339; exclusive.")


@strawberry.type
class Query:
    @strawberry.field(description="Deliveries, newest first, without payloads.")
    def deliveries(
        self, info: Info, filter: DeliveryFilter | None = None,
        first: int | None = DEFAULT_PAGE, after: str | None = None,
    ) -> DeliveryConnection:
        filter = filter or DeliveryFilter()
        limit = page_size(first)
        rows = inspection.deliveries(
            info.context.pool,
            limit=limit + 1,
            before_id=cursors.id_after("deliveries", after),
            config_id=arguments.text(filter.config_id, "filter.configId"),
            statuses=[status.value for status in filter.status or ()],
            event_type=arguments.text(filter.event_type, "filter.eventType"),
            event_id=arguments.text(filter.event_id, "filter.eventId"),
            created_after=arguments.instant(filter.created_after, "filter.createdAfter"),
            created_before=arguments.instant(filter.created_before, "filter.createdBefore"),
        )
        return connection(DeliveryConnection, DeliveryEdge, rows, limit,
                          lambda row: cursors.encode("deliveries", id=row.id),
                          DeliverySummary.from_row)

    @strawberry.field(description="One delivery with its payload and attempts. An id that "
                                  "cannot name a delivery is BAD_USER_INPUT; an unknown one, "
                                  "NOT_FOUND.")
    def delivery(self, info: Info, id: strawberry.ID) -> Delivery | None:
        number = arguments.delivery_id(id)
        row = inspection.delivery(info.context.pool, number)
        if row is None:
            raise NotFound(f"delivery {number} not found")
        return Delivery.from_detail(row)

    @strawberry.field(description="Configs that are not deleted, newest first.")
    def configs(self, info: Info, active: bool | None = None, first: int | None = DEFAULT_PAGE,
                after: str | None = None) -> ConfigConnection:
        limit = page_size(first)
        rows = configs.page(info.context.pool, limit=limit + 1, active=active,
                            after=cursors.created_and_id_after("configs", after))
        return connection(
            ConfigConnection, ConfigEdge, rows, limit,
            lambda row: cursors.encode("configs", createdAt=row.created_at.isoformat(),
                                       id=row.id),
            Config.from_row,
        )

    @strawberry.field(description="One config; NOT_FOUND if unknown or deleted.")
    def config(self, info: Info, id: strawberry.ID) -> Config | None:
        row = configs.get(info.context.pool, arguments.text(id, "id"))
        if row is None:
            raise NotFound(f"config {arguments.shown(id)} not found")
        return Config.from_row(row)

    @strawberry.field(description="Counts by status, queue depth and backlog age.")
    def stats(self, info: Info) -> Stats:
        pool = info.context.pool
        numbers = inspection.stats(pool)
        return Stats(
            by_status=[StatusCount(status=DeliveryStatus(status), count=count)
                       for status, count in numbers.by_status.items()],
            queue_depth=numbers.queue_depth,
            oldest_due_age_seconds=numbers.oldest_due_age_seconds,
            rejected_events=rejected.count(pool),
        )

    @strawberry.field(description="Broker messages that could not become events, newest first.")
    def rejected_events(self, info: Info, first: int | None = DEFAULT_PAGE,
                        after: str | None = None) -> RejectedEventConnection:
        limit = page_size(first)
        rows = rejected.page(info.context.pool, limit=limit + 1,
                             after_id=cursors.id_after("rejectedEvents", after))
        return connection(RejectedEventConnection, RejectedEventEdge, rows, limit,
                          lambda row: cursors.encode("rejectedEvents", id=row.id),
                          RejectedEvent.from_row)

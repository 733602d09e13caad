"""Read-only queries: deliveries, configs (and those needing attention), stats, attempt
history, the caller, rejected messages; with the tenants' (graphql_schema.tenant_api), the
Query type."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Annotated

import strawberry
from strawberry.tools import merge_types

from db import configs, health, inspection, ordering, rates, rejected, stalls
from db.errors import InvalidInput, NotFound
from db.scope import Scope
from graphql_schema import arguments, cursors, filters, history, tenancy
from graphql_schema.access import PlatformOnly
from graphql_schema.catalog_api import CatalogQueries
from graphql_schema.connections import (
    COUNT_BOUND,
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
from graphql_schema.filter_api import FilterQueries
from graphql_schema.filters import ConfigFilter, DeliveryFilter
from graphql_schema.portal_api import grant_of
from graphql_schema.tenant_api import TenantQueries
from graphql_schema.types import (
    MAX_RATE_HOURS,
    AttemptHistory,
    Config,
    ConfigAttention,
    Delivery,
    DeliveryStatus,
    DeliverySummary,
    HealthState,
    Me,
    RejectedEvent,
    Role,
    StalledPartition,
    Stats,
    StatusCount,
    page_rates,
    rate_window,
)

HISTORY_SCAN_LIMIT = 100_000  # newest attempts read by attemptHistory (≈ 0.3 s on 2 cores)
MAX_HISTORY_HOURS = 7 * 24
MAX_ATTENTION = 100  # configs configsNeedingAttention lists at most
MAX_BUCKETS = 500
ONE_TENANT = ("Only this tenant's, by its uid (a tenant token sees its own only: another uid is "
              "NOT_FOUND).")


@strawberry.enum(description="How deliveries are sorted.")
class DeliveryOrder(Enum):
    CREATED_AT_DESC = strawberry.enum_value(
        "created_at_desc", description="Newest first (by creation).")
    NEXT_ATTEMPT_AT = strawberry.enum_value(
        "next_attempt_at", description="Soonest next attempt first; lists only the deliveries "
                                       "that have one (pending work).")


LISTINGS = {DeliveryOrder.CREATED_AT_DESC: ("deliveries", inspection.Order.NEWEST),
            DeliveryOrder.NEXT_ATTEMPT_AT: ("deliveriesByDue", inspection.Order.DUE_SOONEST)}


def _delivery_cursor(order: DeliveryOrder, scope: Scope,
                     row: inspection.DeliverySummary) -> str:
    listing = LISTINGS[order][0]
    if order is DeliveryOrder.NEXT_ATTEMPT_AT:
        return cursors.encode(listing, scope, due=row.next_attempt_at.isoformat(), id=row.id)
    return cursors.encode(listing, scope, createdAt=row.created_at.isoformat(), id=row.id)


def _delivery_position(order: DeliveryOrder, scope: Scope, cursor: str | None,
                       argument: str) -> tuple[datetime, int] | None:
    listing = LISTINGS[order][0]
    key = "due" if order is DeliveryOrder.NEXT_ATTEMPT_AT else "createdAt"
    return cursors.time_and_id_after(listing, scope, cursor, argument, key=key)


def _health_of(info: Info, rows: list) -> dict:
    """Load the health of a page of configs in one query."""
    return (health.of_configs(info.context.pool, info.context.scope, [row.id for row in rows])
            if rows else {})


@strawberry.type
class DeliveryQueries:
    @strawberry.field(description="Deliveries without payloads, newest first unless `orderBy` "
                                  "says otherwise. Page forwards with `first`/`after`, or "
                                  "backwards with `last`/`before` (then `first` is ignored).")
    def deliveries(
        self, info: Info, filter: DeliveryFilter | None = None,
        first: int | None = DEFAULT_PAGE, after: str | None = None,
        last: int | None = None, before: str | None = None,
        order_by: DeliveryOrder = DeliveryOrder.CREATED_AT_DESC,
    ) -> DeliveryConnection:
        if after is not None and before is not None:
            raise InvalidInput("give after or before, not both")
        backwards = last is not None or before is not None
        limit = page_size(last if last is not None else first,
                          "last" if last is not None else "first")
        checked = filters.to_db(info, filter)
        scope = info.context.scope
        position = (_delivery_position(order_by, scope, before, "before") if backwards
                    else _delivery_position(order_by, scope, after, "after"))
        pool = info.context.pool
        rows = inspection.deliveries(pool, scope, checked, limit=limit + 1,
                                     order=LISTINGS[order_by][1], cursor=position,
                                     backwards=backwards)
        tenancy.listed(info, (row.tenant_id for row in rows[:limit]))
        counted = functools.cache(lambda: inspection.count(pool, scope, checked,
                                                           bound=COUNT_BOUND))
        return connection(DeliveryConnection, DeliveryEdge, rows, limit,
                          functools.partial(_delivery_cursor, order_by, scope),
                          DeliverySummary.from_row, from_cursor=position is not None,
                          backwards=backwards, count=counted)

    @strawberry.field(description="One delivery with its payload and attempts. An id that "
                                  "cannot name a delivery is BAD_USER_INPUT; an unknown one, "
                                  "NOT_FOUND.")
    def delivery(self, info: Info, id: strawberry.ID) -> Delivery | None:
        number = arguments.delivery_id(id)
        row = inspection.delivery(info.context.pool, info.context.scope, number)
        if row is None:
            raise NotFound(f"delivery {number} not found")
        return Delivery.from_detail(row)

    @strawberry.field(description="Configs that are not deleted, newest first, that `filter` "
                                  "matches. Page forwards with `first`/`after`, or backwards "
                                  "with `last`/`before` (then `first` is ignored).")
    def configs(
        self, info: Info, filter: ConfigFilter | None = None,
        first: int | None = DEFAULT_PAGE, after: str | None = None,
        last: int | None = None, before: str | None = None,
        active: Annotated[bool | None, strawberry.argument(
            deprecation_reason="Use filter.active.")] = None,
        health: Annotated[HealthState | None, strawberry.argument(
            deprecation_reason="Use filter.health.")] = None,
    ) -> ConfigConnection:
        if after is not None and before is not None:
            raise InvalidInput("give after or before, not both")
        backwards = last is not None or before is not None
        limit = page_size(last if last is not None else first,
                          "last" if last is not None else "first")
        checked = filters.configs_to_db(info, filter, active=active, health=health)
        scope = info.context.scope
        position = (cursors.created_and_id_after("configs", scope, before, "before")
                    if backwards else cursors.created_and_id_after("configs", scope, after))
        pool = info.context.pool
        rows = configs.page(pool, scope, limit=limit + 1, filter=checked, cursor=position,
                            backwards=backwards)
        healths = _health_of(info, rows[:limit])
        tenancy.listed(info, (row.tenant_id for row in rows[:limit]))
        rates_of_page = page_rates(pool, scope, [row.id for row in rows[:limit]])
        return connection(
            ConfigConnection, ConfigEdge, rows, limit,
            lambda row: cursors.encode("configs", scope, createdAt=row.created_at.isoformat(),
                                       id=row.id),
            lambda row: Config.from_row(row, healths.get(row.id), rates_of_page),
            from_cursor=position is not None, backwards=backwards,
            count=functools.cache(lambda: configs.count(pool, scope, checked,
                                                        bound=COUNT_BOUND)),
        )

    @strawberry.field(description="One config; NOT_FOUND if unknown or deleted.")
    def config(self, info: Info, id: strawberry.ID) -> Config | None:
        row = configs.get(info.context.pool, info.context.scope, arguments.text(id, "id"))
        if row is None:
            raise NotFound(f"config {arguments.shown(id)} not found")
        return Config.from_row(row)

    @strawberry.field(description="The platform's counts by status, queue depth and backlog "
                                  "age (a tenant's are `Tenant.stats`).",
                      permission_classes=[PlatformOnly])
    def stats(self, info: Info) -> Stats:
        pool = info.context.pool
        numbers = inspection.stats(pool)
        return Stats(
            by_status=[StatusCount(status=DeliveryStatus(status), count=count.value,
                                   estimated=count.estimated)
                       for status, count in numbers.by_status.items()],
            queue_depth=numbers.queue_depth,
            oldest_due_age_seconds=numbers.oldest_due_age_seconds,
            rejected_events=rejected.count(pool),
            stalled_partitions=[StalledPartition.from_row(row) for row in stalls.listed(pool)],
            blocked_keys=ordering.count_blocked(pool),
        )

    @strawberry.field(description="Attempts by outcome per time bucket and per config over the "
                                  "last `hours` (or `minutes`, for a window shorter than an "
                                  "hour), for charts. Reads at most the newest "
                                  f"{HISTORY_SCAN_LIMIT:,} attempts (see `complete`).")
    def attempt_history(self, info: Info, hours: int = 24, bucket_minutes: int = 60,
                        config_ids: list[strawberry.ID] | None = None,
                        minutes: int | None = None,
                        tenant: Annotated[str | None, strawberry.argument(
                            description=ONE_TENANT)] = None) -> AttemptHistory:
        if minutes is None:
            if not 1 <= hours <= MAX_HISTORY_HOURS:
                raise InvalidInput(f"hours: must be between 1 and {MAX_HISTORY_HOURS}")
            minutes = hours * 60
        elif not 1 <= minutes <= MAX_HISTORY_HOURS * 60:
            raise InvalidInput(f"minutes: must be between 1 and {MAX_HISTORY_HOURS * 60}")
        if not 1 <= bucket_minutes <= 24 * 60 or minutes // bucket_minutes > MAX_BUCKETS:
            raise InvalidInput(f"bucketMinutes: between 1 and 1440, and at most {MAX_BUCKETS} "
                               "buckets in the window")
        bucket = timedelta(minutes=bucket_minutes)
        now = datetime.now(UTC)
        since = history.window_start(now, timedelta(minutes=minutes), bucket)
        ids = arguments.texts([str(i) for i in config_ids or ()], "configIds")
        pool, scope = info.context.pool, tenancy.narrowed(info, tenant)
        found = inspection.attempt_history(
            pool, scope, since=since, bucket_seconds=int(bucket.total_seconds()),
            config_ids=ids, scan_limit=HISTORY_SCAN_LIMIT)
        summary = history.summarise(found, since=since, bucket=bucket, until=now)
        if ids:  # each asked-for config's totals exact, whatever the scan reached
            names = {row.id: row.name for row in configs.by_ids(pool, scope, ids)}
            seen = [id for id in ids if id in names]  # another tenant's: as an unknown id
            summary.configs = history.config_totals(rates.recent(pool, scope, seen,
                                                                 since=since), names)
        return summary

    @strawberry.field(description=f"The active configs a person should look at first, at most "
                                  f"`first` (1 to {MAX_ATTENTION}): circuits open or half-open, "
                                  "then the "
                                  f"most failed attempts in the last `hours` (1 to "
                                  f"{MAX_RATE_HOURS}) or attempts under way without an "
                                  "answer (`unanswered`), then "
                                  "paused ones. Reads only configs with a failure, a hold or "
                                  "an unanswered attempt.")
    def configs_needing_attention(self, info: Info, hours: int = 1, first: int = 10,
                                  tenant: Annotated[str | None, strawberry.argument(
                                      description=ONE_TENANT)] = None
                                  ) -> list[ConfigAttention]:
        if not 1 <= hours <= MAX_RATE_HOURS:
            raise InvalidInput(f"hours: must be between 1 and {MAX_RATE_HOURS}")
        if not 1 <= first <= MAX_ATTENTION:
            raise InvalidInput(f"first: must be between 1 and {MAX_ATTENTION}")
        pool, scope = info.context.pool, tenancy.narrowed(info, tenant)
        found = rates.needing_attention(pool, scope, since=rate_window(hours), limit=first)
        listed = {row.id: row for row in configs.by_ids(pool, scope, [row.id for row in found])}
        tenancy.listed(info, (row.tenant_id for row in listed.values()))
        healths = health.of_configs(pool, scope, list(listed)) if listed else {}
        return [ConfigAttention(
                    config=Config.from_row(listed[row.id], healths.get(row.id)),
                    state=HealthState(row.state), failures=row.failures, attempts=row.attempts,
                    last_failure=row.last_failure, last_failure_at=row.last_failure_at,
                    reason=row.reason, unanswered=row.unanswered,
                    unanswered_since=row.unanswered_since)
                for row in found if row.id in listed]

    @strawberry.field(description="Who the caller is: the role of the token sent, and the "
                                  "tenant it acts for (null: the whole platform).")
    def me(self, info: Info) -> Me:
        role = Role(info.context.role)
        return Me(role=role, can_mutate=role is Role.OPERATOR,
                  tenant_uid=info.context.tenant_uid, portal=grant_of(info))

    @strawberry.field(description="Broker messages that could not become events, newest first.",
                      permission_classes=[PlatformOnly])
    def rejected_events(self, info: Info, first: int | None = DEFAULT_PAGE,
                        after: str | None = None) -> RejectedEventConnection:
        limit = page_size(first)
        scope = info.context.scope
        rows = rejected.page(info.context.pool, limit=limit + 1,
                             after_id=cursors.id_after("rejectedEvents", scope, after))
        return connection(RejectedEventConnection, RejectedEventEdge, rows, limit,
                          lambda row: cursors.encode("rejectedEvents", scope, id=row.id),
                          RejectedEvent.from_row, from_cursor=after is not None,
                          count=lambda: rejected.count(info.context.pool))


Query = merge_types("Query", (DeliveryQueries, TenantQueries, CatalogQueries, FilterQueries))

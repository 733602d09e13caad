"""The tenant as the API shows it: its fields, its limits and its counts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from db import tenants
from db.tenants import Tenant as TenantRow
from db.tenants import TenantStats as StatsRow
from graphql_schema.context import Info


@strawberry.type(description="A tenant's deliveries and attempts, counted now.")
class TenantStats:
    pending: int = strawberry.field(description=f"Counted up to {tenants.STATS_BOUND:,}.")
    delivering: int
    succeeded: int = strawberry.field(description=f"Counted up to {tenants.STATS_BOUND:,}.")
    failed: int = strawberry.field(description=f"Counted up to {tenants.STATS_BOUND:,}.")
    cancelled: int = strawberry.field(description=f"Counted up to {tenants.STATS_BOUND:,}.")
    queue_depth: int = strawberry.field(description="Pending deliveries (as `pending`).")
    oldest_due_age_seconds: float | None = strawberry.field(
        description="How long its longest-waiting config that could be sent to now has "
                    "waited; null when none could.")
    attempts_last_hour: int
    failure_ratio_last_hour: float | None = strawberry.field(
        description="Failed attempts / attempts over the last hour; null without attempts.")

    @classmethod
    def from_row(cls, row: StatsRow) -> TenantStats:
        return cls(pending=row.pending, delivering=row.delivering, succeeded=row.succeeded,
                   failed=row.failed, cancelled=row.cancelled, queue_depth=row.pending,
                   oldest_due_age_seconds=row.oldest_due_age_seconds,
                   attempts_last_hour=row.attempts_last_hour,
                   failure_ratio_last_hour=(row.failed_attempts_last_hour
                                            / row.attempts_last_hour
                                            if row.attempts_last_hour else None))


@strawberry.type(description="A tenant's limits; null: none.")
class TenantLimits:
    max_configs: int | None
    events_per_second: float | None = strawberry.field(
        description="Events it may publish a second (over it: RATE_LIMITED).")
    deliveries_per_second: float | None = strawberry.field(
        description="Deliveries it may be sent a second, across its configs (over it, they "
                    "wait pending: no attempt is spent, and other tenants are not slowed).")


@strawberry.type(description="One customer of the platform: it owns its configs and, through "
                             "them, their deliveries and attempts. Named everywhere by `uid`.")
class Tenant:
    id: strawberry.ID
    uid: str = strawberry.field(description="The platform's own id of its customer.")
    name: str
    metadata: JSON
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = strawberry.field(
        description="When it was deleted: its configs stopped, its history stays until "
                    "retention, its uid stays taken.")
    limits: TenantLimits
    # the stats of the tenants listed with this one (read once for all of them)
    stats_of_page: strawberry.Private[Callable[[], dict[int, StatsRow]] | None] = None

    @strawberry.field(description="Its deliveries by status, queue, and last hour's attempts "
                                  "(read at once for a whole page of tenants).")
    def stats(self, info: Info) -> TenantStats:
        found = self.stats_of_page() if self.stats_of_page else tenants.stats(
            info.context.pool, info.context.scope, [int(self.id)])
        return TenantStats.from_row(found[int(self.id)])

    @classmethod
    def from_row(cls, row: TenantRow, stats_of_page=None) -> Tenant:
        return cls(id=strawberry.ID(str(row.id)), uid=row.uid, name=row.name,
                   metadata=row.metadata, created_at=row.created_at,
                   updated_at=row.updated_at, deleted_at=row.deleted_at,
                   limits=TenantLimits(max_configs=row.max_configs,
                                       events_per_second=row.events_per_second,
                                       deliveries_per_second=row.deliveries_per_second),
                   stats_of_page=stats_of_page)

"""The filters of the API: the one delivery filter, shared by the `deliveries` listing and bulk
replay, and the configs filter.

Older names stay accepted, deprecated: `configId`, `eventType` (one value) and the
`createdAtFrom`/`createdAtTo` of the former bulk-replay filter.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from db import configs, filters
from db.errors import InvalidInput
from db.vocabulary import Status
from graphql_schema import arguments, tenancy
from graphql_schema.context import Info
from graphql_schema.types import DeliveryStatus, HealthState

MAX_VALUES = 100  # values in one list of a filter


@strawberry.input(description="Every given field must match; omitted (or null) fields and "
                              "empty lists match all.")
class DeliveryFilter:
    config_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Any of these configs.")
    status: list[DeliveryStatus] | None = strawberry.field(
        default=None, description="Any of these statuses.")
    event_types: list[str] | None = strawberry.field(
        default=None, description="Any of these event types (exact).")
    event_id: str | None = None
    last_status_codes: list[int] | None = strawberry.field(
        default=None, description="Any of these last response codes; 0: no response arrived.")
    created_after: datetime | None = strawberry.field(
        default=None, description="RFC 3339; inclusive.")
    created_before: datetime | None = strawberry.field(
        default=None, description="RFC 3339; exclusive.")
    ordering_key: str | None = strawberry.field(
        default=None, description="The deliveries of events with this ordering key.")
    webhook_id: str | None = strawberry.field(
        default=None, description="The delivery whose requests carried this `webhook-id` "
                                  "(`msg_…`), the id every receiver logs.")
    tenant: str | None = strawberry.field(
        default=None, description="One tenant's deliveries, by its uid (a tenant token sees "
                                  "its own only: another uid is NOT_FOUND).")
    config_id: strawberry.ID | None = strawberry.field(
        default=None, deprecation_reason="Use configIds.")
    event_type: str | None = strawberry.field(
        default=None, deprecation_reason="Use eventTypes.")
    created_at_from: datetime | None = strawberry.field(
        default=None, deprecation_reason="Use createdAfter.")
    created_at_to: datetime | None = strawberry.field(
        default=None, deprecation_reason="Use createdBefore.")


@strawberry.input(description="Every given field must match; omitted (or null) fields match "
                              "all.")
class ConfigFilter:
    search: str | None = strawberry.field(
        default=None, description="A piece of the name or the endpoint, in any case, or the "
                                  "exact id.")
    health: HealthState | None = strawberry.field(
        default=None, description="Only configs in this health state.")
    active: bool | None = strawberry.field(
        default=None, description="Only active (true) or inactive (false) configs.")
    tenant: str | None = strawberry.field(
        default=None, description="One tenant's configs, by its uid (a tenant token sees its "
                                  "own only: another uid is NOT_FOUND).")


MAX_SEARCH = 200  # characters of a configs search


def configs_to_db(info: Info, given: ConfigFilter | None, *, active: bool | None = None,
                  health: HealthState | None = None) -> configs.ConfigFilter:
    """Return the database's configs filter of `given`; `active` and `health` are the older
    arguments of `configs`, which the filter's own fields may not contradict."""
    given = given or ConfigFilter()
    chosen_active = _one_of(given.active, active, "filter.active", "active")
    chosen_health = _one_of(given.health, health, "filter.health", "health")
    search = given.search
    if search is not None:
        search = arguments.text(search, "filter.search")
        if len(search) > MAX_SEARCH:
            raise InvalidInput(f"filter.search: at most {MAX_SEARCH} characters")
    return configs.ConfigFilter(active=chosen_active,
                                health_state=chosen_health.value if chosen_health else None,
                                search=search,
                                tenant_id=tenancy.filter_id(info, given.tenant))


def _one_of(new: object, old: object, new_name: str, old_name: str) -> object:
    if new is not None and old is not None:
        raise InvalidInput(f"filter: give {new_name} or {old_name}, not both")
    return new if new is not None else old


def _listed(values: list | None, field: str) -> list | None:
    if values is not None and len(values) > MAX_VALUES:
        raise InvalidInput(f"filter.{field}: at most {MAX_VALUES} values")
    return values


def to_db(info: Info, given: DeliveryFilter | None, *,
          replayable_only: bool = False) -> filters.DeliveryFilter:
    """Return the checked `db/` filter of an API filter (None matches all)."""
    given = given or DeliveryFilter()
    config_ids = _one_of(_listed(given.config_ids, "configIds"),
                         None if given.config_id is None else [given.config_id],
                         "configIds", "configId")
    event_types = _one_of(_listed(given.event_types, "eventTypes"),
                          None if given.event_type is None else [given.event_type],
                          "eventTypes", "eventType")
    after = _one_of(given.created_after, given.created_at_from, "createdAfter", "createdAtFrom")
    before = _one_of(given.created_before, given.created_at_to, "createdBefore", "createdAtTo")
    codes = _listed(given.last_status_codes, "lastStatusCodes")
    if codes and not all(0 <= code <= 999 for code in codes):
        raise InvalidInput("filter.lastStatusCodes: status codes are 0 (no response) to 999")
    return filters.DeliveryFilter(
        config_ids=arguments.texts([str(i) for i in config_ids or ()], "filter.configIds"),
        statuses=[Status(status) for status in given.status or ()],
        event_types=arguments.texts(event_types, "filter.eventTypes"),
        event_id=arguments.text(given.event_id, "filter.eventId"),
        last_status_codes=codes,
        created_after=arguments.instant(after, "filter.createdAfter"),
        created_before=arguments.instant(before, "filter.createdBefore"),
        ordering_key=arguments.text(given.ordering_key, "filter.orderingKey"),
        webhook_id=arguments.text(given.webhook_id, "filter.webhookId"),
        replayable_only=replayable_only,
        tenant_id=tenancy.filter_id(info, given.tenant),
    )

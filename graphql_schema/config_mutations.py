"""Mutations of configs: create (one or many), update, activate, deactivate, delete, rotate the
secret."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import strawberry
from strawberry.scalars import JSON

from db import configs, health
from db.configs import ConfigChange as ChangeRow
from db.configs import NewConfig
from db.errors import InvalidInput
from db.vocabulary import SECRET_PREFIX, Ordering, PortalCapability, Status
from graphql_schema import arguments, portal_limits, tenancy
from graphql_schema.access import operator_mutation
from graphql_schema.catalog_api import check_subscriptions
from graphql_schema.context import Info
from graphql_schema.types import Config, DeliveryOrdering

MAX_CONFIGS_CREATED = 1_000  # inputs of one createConfigs


@strawberry.input
class CreateConfigInput:
    endpoint: str = strawberry.field(description="An absolute http(s) URL.")
    tenant: str | None = strawberry.field(
        default=None, description="The uid of the tenant it belongs to; omitted: the token's "
                                  "own tenant, or `default` for a platform-wide token.")
    event_types: list[str] = strawberry.field(description="Exact event types; at least one.")
    name: str | None = None
    secret: str | None = strawberry.field(
        default=None, description=f"{SECRET_PREFIX}<base64> of {configs.SECRET_MIN_BYTES} to "
                                  f"{configs.SECRET_MAX_BYTES} bytes; generated when omitted.")
    active: bool = True
    max_in_flight: int | None = strawberry.field(
        default=None, description="Most attempts in flight at once across all workers, 1 to "
                                  "10,000; omitted: no such bound (each worker sends at most "
                                  "WEBHOOKS_ENDPOINT_CONCURRENCY at once).")
    rate_per_second: float | None = strawberry.field(
        default=None, description="Most attempts started per second across all workers; "
                                  "omitted: no limit.")
    ordering: DeliveryOrdering = strawberry.field(
        default=DeliveryOrdering.UNORDERED,
        description="PER_KEY: the deliveries of one ordering key are attempted one at a "
                    "time, in the order their events were ingested.")
    block_on_failure: bool = strawberry.field(
        default=True, description="Ordered: a failed delivery holds its key until it is "
                                  "replayed and succeeds; false: the key moves on.")
    filter: JSON | None = strawberry.field(
        default=None,
        description="A match on the payload an event must pass to be delivered: MongoDB's "
                    "query operators ($eq $ne $gt $gte $lt $lte $in $nin $exists $regex $and "
                    "$or $not) over dotted paths, e.g. {\"amount\": {\"$gte\": 100}} "
                    "(docs/filters.md); omitted: every event of its types.")


@strawberry.input(description="Omitted fields keep their value; a null name, cap or rate "
                              "clears it.")
class UpdateConfigInput:
    endpoint: str | None = strawberry.UNSET
    event_types: list[str] | None = strawberry.UNSET
    name: str | None = strawberry.UNSET
    max_in_flight: int | None = strawberry.field(
        default=strawberry.UNSET, description="1 to 10,000; null: the default cap.")
    rate_per_second: float | None = strawberry.field(
        default=strawberry.UNSET, description="Attempts per second; null: no limit.")
    ordering: DeliveryOrdering | None = strawberry.field(
        default=strawberry.UNSET, description="To UNORDERED: the deliveries waiting for "
                                              "their key's turn become due.")
    block_on_failure: bool | None = strawberry.UNSET
    filter: JSON | None = strawberry.field(
        default=strawberry.UNSET,
        description="A match on the payload an event must pass to be delivered: MongoDB's "
                    "query operators ($eq $ne $gt $gte $lt $lte $in $nin $exists $regex $and "
                    "$or $not) over dotted paths, e.g. {\"amount\": {\"$gte\": 100}} "
                    "(docs/filters.md); null: none (every event of its types). It "
                    "applies to events ingested from then on.")


@strawberry.type(description="A config and its secret, shown on creation and rotation only.")
class ConfigWithSecret:
    config: Config
    secret: str


@strawberry.type(description="A config after deactivation or deletion.")
class ConfigChange:
    config: Config
    cancelled_deliveries: int = strawberry.field(
        description="Pending deliveries the change cancelled.")


def _config_id(id: strawberry.ID) -> str:
    return arguments.text(str(id), "id")


def _endpoint(info: Info, endpoint: str | None) -> str | None:
    """Return `endpoint` unless webhooks could not be sent to it (private addresses). A host
    is looked up once per request: a thousand configs created at once on one host cost one
    name resolution, not a thousand."""
    endpoint = arguments.text(endpoint, "endpoint")
    refusal = info.context.endpoint_refusal
    if endpoint is None or refusal is None:
        return endpoint
    try:
        host = urlsplit(endpoint.strip()).netloc.lower()
    except ValueError:
        host = endpoint
    checked = info.context.endpoint_checks
    if host not in checked:
        checked[host] = refusal(endpoint)
    if checked[host]:
        raise InvalidInput(f"endpoint: {checked[host]}")
    return endpoint


def _new_config(info: Info, input: CreateConfigInput) -> NewConfig:
    """Return the config `input` asks for, its texts and endpoint checked."""
    return NewConfig(tenant_id=tenancy.owner(info, input.tenant).id,
                     endpoint=_endpoint(info, input.endpoint),
                     event_types=_subscriptions(info, input.event_types),
                     name=arguments.text(input.name, "name"),
                     secret=arguments.text(input.secret, "secret"),
                     active=input.active,
                     max_in_flight=input.max_in_flight,
                     rate_per_second=input.rate_per_second,
                     ordering=Ordering(input.ordering.value),
                     block_on_failure=input.block_on_failure,
                     filter=input.filter)


def _subscriptions(info: Info, given: list[str] | None) -> list[str] | None:
    """Return a config's subscriptions, checked against the catalog when it is strict and
    against the caller's portal session, if it is one."""
    subscriptions = arguments.texts(given, "eventTypes")
    check_subscriptions(info, subscriptions)
    portal_limits.check_subscriptions(info, subscriptions)
    return subscriptions


def _given(value: Any) -> Any:
    return None if value is strawberry.UNSET else value


def _limit(value: Any) -> Any:
    return health.KEEP if value is strawberry.UNSET else value


def _change(info: Info, change: ChangeRow) -> ConfigChange:
    info.context.telemetry.transition(Status.PENDING, Status.CANCELLED, change.cancelled)
    return ConfigChange(config=Config.from_row(change.config),
                        cancelled_deliveries=change.cancelled)


@strawberry.type
class ConfigMutations:
    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Create a config; its secret is shown here once.")
    def create_config(self, info: Info, input: CreateConfigInput) -> ConfigWithSecret:
        config, secret = configs.create_many(info.context.pool, [_new_config(info, input)])[0]
        return ConfigWithSecret(config=Config.from_row(config), secret=secret)

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description=f"Create up to {MAX_CONFIGS_CREATED:,} configs in one "
                                   "transaction, all or none, in the order given; their "
                                   "secrets are shown here once.")
    def create_configs(self, info: Info,
                       inputs: list[CreateConfigInput]) -> list[ConfigWithSecret]:
        if not 1 <= len(inputs) <= MAX_CONFIGS_CREATED:
            raise InvalidInput(f"inputs: give 1 to {MAX_CONFIGS_CREATED:,} configs, not "
                               f"{len(inputs):,}")
        tenancy.look_up(info, (input.tenant for input in inputs))
        new = []
        for number, input in enumerate(inputs, start=1):
            try:
                new.append(_new_config(info, input))
            except InvalidInput as error:
                raise configs.numbered(error, number, len(inputs)) from None
        return [ConfigWithSecret(config=Config.from_row(config), secret=secret)
                for config, secret in configs.create_many(info.context.pool, new)]

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Change the endpoint, event types, name, limits, ordering, "
                                   "failure policy or filter of a config.")
    def update_config(self, info: Info, id: strawberry.ID, input: UpdateConfigInput) -> Config:
        subscriptions = _subscriptions(info, _given(input.event_types))
        portal_limits.check_config(info, _config_id(id), subscriptions)
        config = configs.update(
            info.context.pool,
            info.context.scope,
            _config_id(id),
            endpoint=_endpoint(info, _given(input.endpoint)),
            event_types=subscriptions,
            name=arguments.text(_given(input.name), "name"),
            set_name=input.name is not strawberry.UNSET,
            max_in_flight=_limit(input.max_in_flight),
            rate_per_second=_limit(input.rate_per_second),
            ordering=None if _given(input.ordering) is None else Ordering(input.ordering.value),
            block_on_failure=_given(input.block_on_failure),
            filter=_given(input.filter),
            set_filter=input.filter is not strawberry.UNSET,
        )
        return Config.from_row(config)

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Activate a config; cancelled deliveries stay cancelled.")
    def activate_config(self, info: Info, id: strawberry.ID) -> Config:
        portal_limits.check_config(info, _config_id(id))
        return Config.from_row(configs.activate(info.context.pool, info.context.scope,
                                                _config_id(id), actor=info.context.token_name))

    @operator_mutation(capability=PortalCapability.MANAGE_ENDPOINTS,
                       description="Deactivate a config and cancel its pending deliveries.")
    def deactivate_config(self, info: Info, id: strawberry.ID) -> ConfigChange:
        return _change(info, configs.deactivate(info.context.pool, info.context.scope,
                                                _config_id(id), actor=info.context.token_name))

    @operator_mutation(
        capability=PortalCapability.MANAGE_ENDPOINTS,
        description="Delete a config and cancel its pending deliveries; they stay inspectable.")
    def delete_config(self, info: Info, id: strawberry.ID) -> ConfigChange:
        return _change(info, configs.delete(info.context.pool, info.context.scope,
                                            _config_id(id), actor=info.context.token_name))

    @operator_mutation(
        capability=PortalCapability.ROTATE_SECRET,
        description="Install a new secret (generated when omitted); each rotated-out secret "
                    "(the 5 newest) keeps signing alongside it for its own grace period: "
                    "`graceSeconds` for the one retired now (0 to 2592000, default "
                    "WEBHOOKS_SECRET_ROTATION_GRACE). A grace of 0 stops every rotated-out "
                    "secret signing at once, to revoke a leaked one.")
    def rotate_config_secret(self, info: Info, id: strawberry.ID, secret: str | None = None,
                             grace_seconds: int | None = None) -> ConfigWithSecret:
        portal_limits.check_config(info, _config_id(id))
        grace = arguments.grace_seconds(grace_seconds)
        if grace is None:
            grace = info.context.secret_rotation_grace
        config, new_secret = configs.rotate_secret(
            info.context.pool, info.context.scope, _config_id(id),
            secret=arguments.text(secret, "secret"),
            grace_seconds=grace,
        )
        return ConfigWithSecret(config=Config.from_row(config), secret=new_secret)

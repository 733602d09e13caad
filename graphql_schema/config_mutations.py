"""Mutations of configs: create, update, activate, deactivate, delete, rotate the secret."""

from __future__ import annotations

from typing import Any

import strawberry

from db import configs
from db.configs import ConfigChange as ChangeRow
from graphql_schema import arguments
from graphql_schema.access import operator_mutation
from graphql_schema.context import Info
from graphql_schema.types import Config


@strawberry.input
class CreateConfigInput:
    endpoint: str = strawberry.field(description="An absolute http(s) URL.")
    event_types: list[str] = strawberry.field(description="Exact event types; at least one.")
    name: str | None = None
    secret: str | None = strawberry.field(
        default=None, description="whsec_<base64> of 24 to 64 bytes; generated when omitted.")
    active: bool = True


@strawberry.input(description="Omitted fields keep their value; a null name clears it.")
class UpdateConfigInput:
    endpoint: str | None = strawberry.UNSET
    event_types: list[str] | None = strawberry.UNSET
    name: str | None = strawberry.UNSET


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


def _given(value: Any) -> Any:
    return None if value is strawberry.UNSET else value


def _change(info: Info, change: ChangeRow) -> ConfigChange:
    info.context.telemetry.transition("pending", "cancelled", change.cancelled)
    return ConfigChange(config=Config.from_row(change.config),
                        cancelled_deliveries=change.cancelled)


@strawberry.type
class ConfigMutations:
    @operator_mutation(description="Create a config; its secret is shown here once.")
    def create_config(self, info: Info, input: CreateConfigInput) -> ConfigWithSecret:
        config, secret = configs.create(
            info.context.pool,
            endpoint=arguments.text(input.endpoint, "endpoint"),
            event_types=arguments.texts(input.event_types, "eventTypes"),
            name=arguments.text(input.name, "name"),
            secret=arguments.text(input.secret, "secret"),
            active=input.active,
        )
        return ConfigWithSecret(config=Config.from_row(config), secret=secret)

    @operator_mutation(description="Change the endpoint, event types or name of a config.")
    def update_config(self, info: Info, id: strawberry.ID, input: UpdateConfigInput) -> Config:
        config = configs.update(
            info.context.pool,
            _config_id(id),
            endpoint=arguments.text(_given(input.endpoint), "endpoint"),
            event_types=arguments.texts(_given(input.event_types), "eventTypes"),
            name=arguments.text(_given(input.name), "name"),
            set_name=input.name is not strawberry.UNSET,
        )
        return Config.from_row(config)

    @operator_mutation(description="Activate a config; cancelled deliveries stay cancelled.")
    def activate_config(self, info: Info, id: strawberry.ID) -> Config:
        return Config.from_row(configs.activate(info.context.pool, _config_id(id)))

    @operator_mutation(description="Deactivate a config and cancel its pending deliveries.")
    def deactivate_config(self, info: Info, id: strawberry.ID) -> ConfigChange:
        return _change(info, configs.deactivate(info.context.pool, _config_id(id)))

    @operator_mutation(
        description="Delete a config and cancel its pending deliveries; they stay inspectable.")
    def delete_config(self, info: Info, id: strawberry.ID) -> ConfigChange:
        return _change(info, configs.delete(info.context.pool, _config_id(id)))

    @operator_mutation(
        description="Install a new secret (generated when omitted); each rotated-out secret "
                    "(the 5 newest) keeps signing alongside it for its own grace period.")
    def rotate_config_secret(self, info: Info, id: strawberry.ID,
                             secret: str | None = None) -> ConfigWithSecret:
        config, new_secret = configs.rotate_secret(
            info.context.pool, _config_id(id), secret=arguments.text(secret, "secret"),
            grace_seconds=info.context.secret_rotation_grace,
        )
        return ConfigWithSecret(config=Config.from_row(config), secret=new_secret)

"""Tenants and API tokens: the platform's customers (listed, created, changed, deleted) and the
tokens that act for the whole platform or for one of them. Platform-wide tokens only, but
`tenant(uid)`, which a tenant token may ask of its own tenant."""

from __future__ import annotations

import functools
from datetime import datetime
from enum import Enum

import strawberry
from strawberry.scalars import JSON

from db import tenants, tokens
from db.errors import InvalidInput, NotFound
from db.tenants import CLEAR, NewTenant, TenantFilter
from graphql_schema import arguments, cursors, tenancy
from graphql_schema.access import PlatformOnly, operator_mutation
from graphql_schema.connections import COUNT_BOUND, DEFAULT_PAGE, PageInfo, connection, page_size
from graphql_schema.context import Info
from graphql_schema.tenant_types import Tenant

MAX_TENANTS_CREATED = 1_000  # inputs of one createTenants


@strawberry.type
class TenantEdge:
    cursor: str
    node: Tenant


@strawberry.type(description="Tenants, newest first.")
class TenantConnection:
    edges: list[TenantEdge]
    page_info: PageInfo
    count: strawberry.Private[object]

    @strawberry.field(description=f"Tenants the filter matches, counted up to {COUNT_BOUND:,} "
                                  "(then one more).")
    def total_count(self) -> int:
        return self.count()


@strawberry.input(description="Every given field must match.")
class TenantFilterInput:
    uid: str | None = None
    name_contains: str | None = strawberry.field(default=None,
                                                 description="A piece of the name, any case.")
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_deleted: bool = False


@strawberry.input
class TenantLimitsInput:
    max_configs: int | None = strawberry.field(default=strawberry.UNSET,
                                               description="Null: no limit.")
    events_per_second: float | None = strawberry.field(default=strawberry.UNSET,
                                                       description="Null: no limit.")
    deliveries_per_second: float | None = strawberry.field(default=strawberry.UNSET,
                                                           description="Null: no limit.")


@strawberry.input
class CreateTenantInput:
    uid: str = strawberry.field(description="The platform's own id of its customer: 1 to 256 "
                                            "printable characters, unique (a deleted "
                                            "tenant's stays taken).")
    name: str | None = strawberry.field(default=None, description="Its uid when omitted.")
    metadata: JSON | None = strawberry.field(default=None, description="A JSON object.")
    limits: TenantLimitsInput | None = None


@strawberry.input(description="Omitted fields keep their value.")
class UpdateTenantInput:
    name: str | None = strawberry.UNSET
    metadata: JSON | None = strawberry.UNSET
    limits: TenantLimitsInput | None = strawberry.UNSET


@strawberry.type
class TenantDeletion:
    tenant: Tenant
    configs_stopped: int
    deliveries_cancelled: int


@strawberry.enum
class TokenRole(Enum):
    VIEWER = "viewer"
    OPERATOR = "operator"


@strawberry.type(description="An API token's record; the token itself is shown once, when "
                             "created.")
class ApiToken:
    name: str
    role: TokenRole
    tenant_uid: str | None = strawberry.field(
        description="The tenant it acts for; null: the whole platform.")
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def from_row(cls, row: tokens.Token) -> ApiToken:
        return cls(name=row.name, role=TokenRole(row.role), tenant_uid=row.tenant_uid,
                   created_at=row.created_at, last_used_at=row.last_used_at,
                   expires_at=row.expires_at, revoked_at=row.revoked_at)


@strawberry.type
class CreatedApiToken:
    token: str = strawberry.field(description="The token: shown here only, never stored.")
    record: ApiToken


def _new_tenant(input: CreateTenantInput) -> NewTenant:
    return NewTenant(uid=input.uid, name=input.name, metadata=input.metadata,
                     **_limits(input.limits, clearing=False))


def _unset_or(value, default=None):
    return default if value is strawberry.UNSET else value


def _limits(given: TenantLimitsInput | None, *, clearing: bool) -> dict:
    """Return the limits of an input: for an update, UNSET keeps and null clears."""
    if given is None or given is strawberry.UNSET:
        return {}
    values = {"max_configs": given.max_configs, "events_per_second": given.events_per_second,
              "deliveries_per_second": given.deliveries_per_second}
    if clearing:
        return {name: CLEAR if value is None else value for name, value in values.items()
                if value is not strawberry.UNSET}
    return {name: value for name, value in values.items()
            if value is not strawberry.UNSET and value is not None}


@strawberry.type
class TenantQueries:
    @strawberry.field(description="Tenants, newest first, that `filter` matches; page forwards "
                                  "with `first`/`after` or backwards with `last`/`before`.",
                      permission_classes=[PlatformOnly])
    def tenants(self, info: Info, filter: TenantFilterInput | None = None,
                first: int | None = DEFAULT_PAGE, after: str | None = None,
                last: int | None = None, before: str | None = None) -> TenantConnection:
        if after is not None and before is not None:
            raise InvalidInput("give after or before, not both")
        backwards = last is not None or before is not None
        limit = page_size(last if last is not None else first,
                          "last" if last is not None else "first")
        given = filter or TenantFilterInput()
        checked = TenantFilter(uid=given.uid, name_contains=given.name_contains,
                               created_after=given.created_after,
                               created_before=given.created_before,
                               include_deleted=given.include_deleted)
        scope, pool = info.context.scope, info.context.pool
        position = cursors.time_and_id_after("tenants", scope, before if backwards else after,
                                             "before" if backwards else "after",
                                             key="createdAt")
        rows = tenants.page(pool, scope, checked, limit=limit + 1, after=position,
                            backwards=backwards)
        shown = rows[:limit]
        stats = functools.cache(lambda: tenants.stats(pool, scope, [row.id for row in shown]))
        return connection(
            TenantConnection, TenantEdge, rows, limit,
            lambda row: cursors.encode("tenants", scope, createdAt=row.created_at.isoformat(),
                                       id=row.id),
            lambda row: Tenant.from_row(row, stats), from_cursor=position is not None,
            backwards=backwards,
            count=functools.cache(lambda: tenants.count(pool, scope, checked,
                                                        bound=COUNT_BOUND)))

    @strawberry.field(description="One tenant by uid (deleted ones too); a tenant token may "
                                  "ask for its own only (any other is NOT_FOUND).")
    def tenant(self, info: Info, uid: str) -> Tenant:
        return Tenant.from_row(tenancy.named(info, uid, "uid"))

    @strawberry.field(description="The live API tokens (never the tokens themselves).",
                      permission_classes=[PlatformOnly])
    def api_tokens(self, info: Info) -> list[ApiToken]:
        return [ApiToken.from_row(row) for row in tokens.live(info.context.pool)]


@strawberry.type
class TenantMutations:
    @operator_mutation(platform=True, description="Create a tenant.")
    def create_tenant(self, info: Info, input: CreateTenantInput) -> Tenant:
        return Tenant.from_row(tenants.create_many(info.context.pool, [_new_tenant(input)])[0])

    @operator_mutation(platform=True,
                       description=f"Create up to {MAX_TENANTS_CREATED:,} tenants in one "
                                   "transaction, all or none, in the order given.")
    def create_tenants(self, info: Info, inputs: list[CreateTenantInput]) -> list[Tenant]:
        if not 1 <= len(inputs) <= MAX_TENANTS_CREATED:
            raise InvalidInput(f"inputs: give 1 to {MAX_TENANTS_CREATED:,} tenants, not "
                               f"{len(inputs):,}")
        return [Tenant.from_row(row) for row in tenants.create_many(
            info.context.pool, [_new_tenant(input) for input in inputs])]

    @operator_mutation(platform=True,
                       description="Change a live tenant's name, metadata or limits.")
    def update_tenant(self, info: Info, uid: str, input: UpdateTenantInput) -> Tenant:
        return Tenant.from_row(tenants.update(
            info.context.pool, arguments.text(uid, "uid"), name=_unset_or(input.name),
            metadata=_unset_or(input.metadata), **_limits(input.limits, clearing=True)))

    @operator_mutation(platform=True,
                       description="Delete a tenant, softly: its configs stop at once and "
                                   "their pending deliveries are cancelled, saying why; its "
                                   "history stays readable until retention; its uid stays "
                                   "taken.")
    def delete_tenant(self, info: Info, uid: str) -> TenantDeletion:
        deleted = tenants.delete(info.context.pool, arguments.text(uid, "uid"),
                                 actor=info.context.token_name)
        return TenantDeletion(tenant=Tenant.from_row(deleted.tenant),
                              configs_stopped=deleted.configs_stopped,
                              deliveries_cancelled=deleted.deliveries_cancelled)

    @operator_mutation(platform=True,
                       description="Mint an API token for the whole platform or (with "
                                   "`tenant`) for one tenant; the token is shown once.")
    def create_api_token(self, info: Info, name: str, role: TokenRole,
                         tenant: str | None = None,
                         expires_in_seconds: float | None = None) -> CreatedApiToken:
        owner = tenancy.named(info, tenant)
        if owner is not None and owner.deleted_at is not None:
            raise NotFound(f"tenant {owner.uid!r} not found")
        record, plain = tokens.create(info.context.pool, name=name, role=role.value,
                                      tenant_id=None if owner is None else owner.id,
                                      expires_in=expires_in_seconds)
        return CreatedApiToken(token=plain, record=ApiToken.from_row(record))

    @operator_mutation(platform=True, description="Revoke the live token called `name`.")
    def revoke_api_token(self, info: Info, name: str) -> ApiToken:
        return ApiToken.from_row(tokens.revoke(info.context.pool, name))

"""Who a request acts for, in one place: the tenant an argument names (as seen by the caller's
scope: another tenant's uid is NOT_FOUND, exactly like an unknown one), the scope a read
narrowed to one tenant runs in, and the tenant a creation or a publish is for when none is
named."""

from __future__ import annotations

from collections.abc import Iterable

from db import tenants
from db.errors import InvalidInput, NotFound
from db.scope import DEFAULT_TENANT_UID, Scope
from db.tenants import Tenant
from graphql_schema import arguments
from graphql_schema.context import Info


def named(info: Info, uid: str | None, argument: str = "tenant") -> Tenant | None:
    """Return the tenant `uid` names as the caller may see it (deleted ones too); None when no
    uid is given; NotFound when none the caller may see has it."""
    if uid is None:
        return None
    uid = arguments.text(uid, argument)
    found = info.context.tenants_named.get(uid) or tenants.get(info.context.pool,
                                                                info.context.scope, uid)
    if found is None:
        raise NotFound(f"tenant {uid!r} not found")
    _seen(info, found)
    return found


def look_up(info: Info, uids: Iterable[str | None]) -> None:
    """Look up at once the tenants `uids` name that this request has not seen (one statement
    for a thousand configs created at once, not one a tenant); `named` then finds them."""
    wanted = {uid for uid in uids if _sendable(uid)} - info.context.tenants_named.keys()
    if wanted:
        for tenant in tenants.by_uids(info.context.pool, info.context.scope, sorted(wanted)):
            _seen(info, tenant)


def _sendable(uid: str | None) -> bool:
    """Say whether `uid` can be looked up (a uid it refuses, `named` refuses in words)."""
    try:
        return arguments.text(uid, "tenant") is not None
    except InvalidInput:
        return False


def _seen(info: Info, tenant: Tenant) -> None:
    info.context.tenants_seen[tenant.id] = tenant
    info.context.tenants_named[tenant.uid] = tenant


def owner(info: Info, uid: str | None) -> Tenant:
    """Return the live tenant a creation or a publish is for: the one `uid` names, else the
    caller's own (a tenant token's), else the tenant `default`."""
    if uid is None:
        uid = info.context.tenant_uid or DEFAULT_TENANT_UID
    tenant = named(info, uid)
    if tenant.deleted_at is not None:
        raise NotFound(f"tenant {uid!r} not found")
    return tenant


def filter_id(info: Info, uid: str | None) -> int | None:
    """Return the id of the tenant a filter names (None: no tenant named)."""
    tenant = named(info, uid)
    return None if tenant is None else tenant.id


def narrowed(info: Info, uid: str | None) -> Scope:
    """Return the scope of a read narrowed to the tenant `uid` names (NotFound as `named`);
    the caller's own scope when no uid is given."""
    tenant = named(info, uid)
    return info.context.scope if tenant is None else Scope(tenant.id)


def listed(info: Info, tenant_ids: Iterable[int]) -> None:
    """Note the tenants of a listing's rows: the first of them asked for (`by_id`) loads them
    all in one statement, not one statement a row."""
    info.context.tenants_listed.update(tenant_ids)


def by_id(info: Info, tenant_id: int) -> Tenant:
    """Return the tenant of `tenant_id` (an object the caller already reached), looked up once
    per request, with the other tenants listed beside it."""
    seen = info.context.tenants_seen
    if tenant_id not in seen:
        wanted = {tenant_id, *info.context.tenants_listed} - seen.keys()
        for tenant in tenants.by_ids(info.context.pool, info.context.scope,
                                     sorted(wanted)).values():
            _seen(info, tenant)
    if tenant_id not in seen:
        raise NotFound("tenant not found")
    return seen[tenant_id]

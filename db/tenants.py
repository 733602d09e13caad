"""Tenants: the platform's customers, each owning its configs and, through them, their
deliveries and attempts. A tenant is named everywhere by its `uid`, the platform's own id of
its customer; deleting one is soft (its configs stop, its pending deliveries are cancelled,
its history stays until retention, its uid stays taken)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db import configs, health
from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.scope import PLATFORM, Scope
from db.sql import QUERIES

MAX_UID_LENGTH = 256
MAX_NAME_LENGTH = 200
STATS_BOUND = 10_000  # deliveries of a status counted exactly per tenant, at most
DELETED_REASON = "its tenant was deleted"
CLEAR = -1  # a limit given as this is removed (None keeps it)


@dataclass(frozen=True)
class Tenant:
    id: int
    uid: str
    name: str
    metadata: Any
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    max_configs: int | None
    events_per_second: float | None
    deliveries_per_second: float | None


@dataclass(frozen=True)
class TenantStats:
    tenant_id: int
    pending: int
    delivering: int
    succeeded: int
    failed: int
    cancelled: int
    oldest_due_age_seconds: float | None
    attempts_last_hour: int
    failed_attempts_last_hour: int


@dataclass(frozen=True)
class TenantFilter:
    uid: str | None = None
    name_contains: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_deleted: bool = False

    def params(self) -> dict[str, Any]:
        pattern = None
        if self.name_contains:
            escaped = (self.name_contains.lower().replace("\\", "\\\\").replace("%", "\\%")
                       .replace("_", "\\_"))
            pattern = f"%{escaped}%"
        return {"uid": self.uid, "name_pattern": pattern, "created_after": self.created_after,
                "created_before": self.created_before, "include_deleted": self.include_deleted}


def check_uid(uid: str) -> str:
    """Return `uid` if it can name a tenant: 1 to 256 printable characters."""
    if not isinstance(uid, str) or not 1 <= len(uid) <= MAX_UID_LENGTH:
        raise InvalidInput(f"uid: give 1 to {MAX_UID_LENGTH} characters")
    if not uid.isprintable():
        raise InvalidInput("uid: only printable characters (no control characters, no line "
                           "breaks)")
    return uid


def _check_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise InvalidInput(f"name: give 1 to {MAX_NAME_LENGTH} characters")
    return name


def _check_limits(max_configs: int | None, events_per_second: float | None,
                  deliveries_per_second: float | None, *, clearable: bool) -> None:
    for label, value in (("maxConfigs", max_configs), ("eventsPerSecond", events_per_second),
                         ("deliveriesPerSecond", deliveries_per_second)):
        if value is None or (clearable and value == CLEAR):
            continue
        if not value > 0:
            raise InvalidInput(f"{label}: must be above 0 (or null for no limit)")


def _metadata(metadata: Any) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata: must be a JSON object")
    return json.dumps(metadata, separators=(",", ":"))


@dataclass(frozen=True)
class NewTenant:
    """What a tenant is created with: checked when it is created."""

    uid: str
    name: str | None = None  # its uid when None
    metadata: Any = None  # a JSON object; {} when None
    max_configs: int | None = None
    events_per_second: float | None = None
    deliveries_per_second: float | None = None

    def row(self) -> dict[str, Any]:
        """Return the checked values of the tenant's row."""
        uid = check_uid(self.uid)
        _check_limits(self.max_configs, self.events_per_second, self.deliveries_per_second,
                      clearable=False)
        return {"uid": uid, "name": _check_name(self.name if self.name is not None else uid),
                "metadata": _metadata(self.metadata if self.metadata is not None else {}),
                "max_configs": self.max_configs, "events_per_second": self.events_per_second,
                "deliveries_per_second": self.deliveries_per_second}


def numbered(error: InvalidInput, number: int, count: int) -> InvalidInput:
    """Return `error` naming the `number`th (from 1) of `count` tenants created at once, as it
    is when there is one."""
    return InvalidInput(f"tenant {number}: {error}") if count > 1 else error


def create(pool: ConnectionPool, *, uid: str, **fields: Any) -> Tenant:
    """Create a tenant (the other fields of a NewTenant); raise InvalidInput when the uid is
    taken, deleted tenants included."""
    return create_many(pool, [NewTenant(uid, **fields)])[0]


def create_many(pool: ConnectionPool, new: Sequence[NewTenant]) -> list[Tenant]:
    """Create the tenants `new` in one statement, all or none; return them in the order given.
    An invalid one of several, a uid given twice or taken (by a tenant deleted or not) is
    named by its place (`tenant 3: ...`, counted from 1)."""
    rows, places = [], {}
    for number, tenant in enumerate(new, start=1):
        try:
            row = tenant.row()
            if row["uid"] in places:
                raise InvalidInput(f"uid: {row['uid']!r} is given twice (tenant "
                                   f"{places[row['uid']]} too)")
        except InvalidInput as error:
            raise numbered(error, number, len(new)) from None
        places[row["uid"]] = number
        rows.append(row)
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["insert_tenants"], {
            column: [row[key] for row in rows] for column, key in (
                ("uids", "uid"), ("names", "name"), ("metadata", "metadata"),
                ("max_configs", "max_configs"), ("events_per_second", "events_per_second"),
                ("deliveries_per_second", "deliveries_per_second"))})
        created = {row["uid"]: as_type(Tenant, row) for row in as_dicts(cursor)}
        taken = next((row["uid"] for row in rows if row["uid"] not in created), None)
        if taken is not None:  # raised inside the transaction: nothing is created
            raise numbered(InvalidInput(f"uid: a tenant {taken!r} exists (a deleted tenant "
                                        "keeps its uid)"), places[taken], len(new))
    return [created[row["uid"]] for row in rows]


def get(pool: ConnectionPool, scope: Scope, uid: str) -> Tenant | None:
    """Return the tenant of `uid` (deleted or not) if `scope` may see it, else None."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_tenant"], {**scope.params(), "uid": uid})
        row = as_dict(cursor)
    return as_type(Tenant, row) if row else None


def by_ids(pool: ConnectionPool, scope: Scope, ids: list[int]) -> dict[int, Tenant]:
    """Return the tenants of `ids` that `scope` may see, by id."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_tenants_by_id"], {**scope.params(), "ids": list(ids)})
        return {row["id"]: as_type(Tenant, row) for row in as_dicts(cursor)}


def by_uids(pool: ConnectionPool, scope: Scope, uids: Sequence[str]) -> list[Tenant]:
    """Return the tenants of `uids` (deleted ones too) that `scope` may see."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_tenants_by_uid"], {**scope.params(), "uids": list(uids)})
        return [as_type(Tenant, row) for row in as_dicts(cursor)]


def resolve(pool: ConnectionPool, scope: Scope, uid: str) -> Tenant:
    """Return the live tenant of `uid` for a change by `scope`; NotFound when it does not
    exist, is deleted, or is another tenant's (which `scope` must not learn exists)."""
    tenant = get(pool, scope, uid)
    if tenant is None or tenant.deleted_at is not None:
        raise NotFound(f"tenant {uid!r} not found")
    return tenant


def ids_of_uids(pool: ConnectionPool, uids: list[str], *, create_missing: bool
                ) -> dict[str, int]:
    """Return the ids of the live tenants among `uids`, by uid; with `create_missing`, the
    uids no tenant has are created first (a deleted tenant's uid stays taken, and absent)."""
    with pool.transaction() as cursor:
        if create_missing:
            cursor.execute(QUERIES["create_tenants_named"],
                           {"uids": sorted({check_uid(uid) for uid in uids})})
        cursor.execute(QUERIES["tenants_of_uids"], {"uids": list(set(uids))})
        return {row["uid"]: row["id"] for row in as_dicts(cursor) if row["deleted_at"] is None}


def update(pool: ConnectionPool, uid: str, *, name: str | None = None, metadata: Any = None,
           max_configs: int | None = None, events_per_second: float | None = None,
           deliveries_per_second: float | None = None) -> Tenant:
    """Change a live tenant's name, metadata or limits (None keeps; a limit of CLEAR
    removes it); raise NotFound for an unknown or deleted one."""
    _check_limits(max_configs, events_per_second, deliveries_per_second, clearable=True)
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["update_tenant"], {
            "uid": uid, "name": None if name is None else _check_name(name),
            "metadata": _metadata(metadata), "max_configs": max_configs,
            "events_per_second": events_per_second,
            "deliveries_per_second": deliveries_per_second})
        row = as_dict(cursor)
    if row is None:
        raise NotFound(f"tenant {uid!r} not found")
    return as_type(Tenant, row)


@dataclass(frozen=True)
class Deleted:
    tenant: Tenant
    configs_stopped: int
    deliveries_cancelled: int


def delete(pool: ConnectionPool, uid: str, *, actor: str | None = None) -> Deleted:
    """Delete a tenant, softly: its configs stop at once and their pending deliveries are
    cancelled saying why, in one transaction; its history stays readable until retention and
    its uid stays taken. NotFound for an unknown or deleted one."""
    tenant = resolve(pool, PLATFORM, uid)
    with pool.transaction() as cursor:
        health.act_as(cursor, actor, DELETED_REASON)
        cursor.execute(QUERIES["lock_tenant"], {"id": tenant.id})
        if as_dict(cursor) is None:
            raise NotFound(f"tenant {uid!r} not found")
        cursor.execute(QUERIES["configs_of_tenant"], {"tenant_id": tenant.id})
        ids = [row["id"] for row in as_dicts(cursor)]
        configs.lock_for_change(cursor, PLATFORM, ids, pending_of=ids)
        # Marked deleted before its configs stop: stopping them announces nothing to the
        # operational tenant (the platform deleted the tenant; `announces_for()`).
        cursor.execute(QUERIES["mark_tenant_deleted"], {"id": tenant.id})
        deleted = as_type(Tenant, as_dict(cursor))
        cursor.execute(QUERIES["stop_configs_of_tenant"], {"tenant_id": tenant.id})
        stopped = cursor.rowcount
        cursor.execute(QUERIES["cancel_pending_deliveries_of_tenant"],
                       {"config_ids": ids, "reason": DELETED_REASON})
        cancelled = cursor.rowcount
    return Deleted(deleted, stopped, cancelled)


def page(pool: ConnectionPool, scope: Scope, filter: TenantFilter, *, limit: int,
         after: tuple[datetime, int] | None = None, backwards: bool = False) -> list[Tenant]:
    """Return up to `limit` tenants `filter` matches that `scope` may see, newest first
    after the (created_at, id) cursor `after` (oldest first with `backwards`)."""
    moment, id = after or (None, None)
    name = "list_tenants_backwards" if backwards else "list_tenants"
    with pool.transaction() as cursor:
        cursor.execute(QUERIES[name], {**scope.params(), **filter.params(), "limit": limit,
                                       "cursor_time": moment, "cursor_id": id})
        return [as_type(Tenant, row) for row in as_dicts(cursor)]


def count(pool: ConnectionPool, scope: Scope, filter: TenantFilter, *, bound: int) -> int:
    """Count the tenants `filter` matches that `scope` may see, up to `bound` + 1."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["count_tenants"],
                       {**scope.params(), **filter.params(), "bound": bound})
        return cursor.fetchone()[0]


def stats(pool: ConnectionPool, scope: Scope, ids: list[int]) -> dict[int, TenantStats]:
    """Return the counts of each of the tenants `ids` that `scope` may see, in one statement:
    deliveries by status (each up to STATS_BOUND), the longest wait of a config that could be
    sent to now, and the attempts of the last hour."""
    visible = [id for id in ids if scope.owns(id)]
    if not visible:
        return {}
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["tenant_stats"], {"ids": visible, "bound": STATS_BOUND})
        return {row["tenant_id"]: as_type(TenantStats, row) for row in as_dicts(cursor)}

"""Subscriber configs: endpoint, secret and event types; one function per change."""

from __future__ import annotations

import base64
import binascii
import json
import secrets as random_secrets
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from db import catalog, event_filter, health
from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts
from db.scope import Scope
from db.sql import QUERIES
from db.vocabulary import SECRET_PREFIX, HealthState, Ordering

SECRET_BYTES = 24  # random bytes in a generated secret
SECRET_MIN_BYTES, SECRET_MAX_BYTES = 24, 64  # accepted key sizes (Standard Webhooks)
MAX_EVENT_TYPE_LENGTH = 255
MAX_ENDPOINT_LENGTH = 2048
# Rotated-out secrets that keep signing at once, newest first. Each adds a signature (about 50
# bytes) to every request's `webhook-signature` header and an HMAC to every attempt; without a
# cap, rotating in a loop would grow the header without bound.
MAX_PREVIOUS_SECRETS = 5
# Configs created at once, as a share of those the statistics know of, after which the tables
# are analysed at once (autovacuum's own share for analysing, without its wait).
ANALYSE_GROWTH = 0.1
ANALYSE_AT_LEAST = 500  # configs created at once below which the tables are left to autovacuum


@dataclass(frozen=True)
class Config:
    id: str
    name: str | None
    endpoint: str
    event_types: list[str]
    active: bool
    created_at: datetime
    updated_at: datetime
    tenant_id: int
    deleted_at: datetime | None = None
    previous_secrets_expire_at: list[datetime] = field(default_factory=list)  # newest first
    ordering: Ordering = Ordering.UNORDERED
    block_on_failure: bool = True  # ordered: a failed delivery holds its key
    filter: Any = None  # the events it receives must match it (docs/filters.md); None: all

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Config:
        ordering = row.get("ordering")
        return cls(**{**row, "ordering": Ordering(ordering) if ordering else Ordering.UNORDERED})


@dataclass(frozen=True)
class ConfigChange:
    """A config after a change, how many pending deliveries the change cancelled, and
    whether it changed anything (deactivating an inactive config does not)."""

    config: Config
    cancelled: int = 0
    changed: bool = True


def mint_secret() -> str:
    """Return a new random `whsec_` secret."""
    return SECRET_PREFIX + base64.b64encode(random_secrets.token_bytes(SECRET_BYTES)).decode()


def check_secret(secret: str) -> str:
    """Return `secret` if it is `whsec_<base64>` (or bare base64) of 24 to 64 bytes."""
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"secret: must be {SECRET_PREFIX} followed by base64") from None
    if not SECRET_MIN_BYTES <= len(key) <= SECRET_MAX_BYTES:
        raise InvalidInput(
            f"secret: must encode {SECRET_MIN_BYTES} to {SECRET_MAX_BYTES} bytes, not {len(key)}"
        )
    return secret.strip()


def check_endpoint(endpoint: str) -> str:
    """Return `endpoint` if it is an absolute http(s) URL with a host."""
    url = endpoint.strip()
    if len(url) > MAX_ENDPOINT_LENGTH:
        raise InvalidInput(f"endpoint: longer than {MAX_ENDPOINT_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise InvalidInput(f"endpoint: not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidInput("endpoint: must be an http:// or https:// URL")
    if not parts.hostname:
        raise InvalidInput("endpoint: must name a host")
    if parts.username or parts.password:
        raise InvalidInput("endpoint: must not carry credentials")
    if port == 0:
        raise InvalidInput("endpoint: port 0 is not valid")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise InvalidInput("endpoint: must not contain spaces or control characters")
    return url


def check_event_types(event_types: Sequence[str]) -> list[str]:
    """Return the distinct, non-empty event types (or patterns: `prefix.*`, `*`), in the order
    given."""
    cleaned = list(dict.fromkeys(t.strip() for t in event_types))
    if not cleaned:
        raise InvalidInput("eventTypes: give at least one event type")
    for event_type in cleaned:
        if not event_type:
            raise InvalidInput("eventTypes: event types must not be empty")
        if len(event_type) > MAX_EVENT_TYPE_LENGTH:
            raise InvalidInput(f"eventTypes: longer than {MAX_EVENT_TYPE_LENGTH} characters")
        catalog.check_subscription(event_type)
    return cleaned


def filter_text(given: Any) -> str | None:
    """Return a filter's checked JSON text (None for no filter); InvalidInput names the place
    in it that is wrong."""
    return None if given is None else event_filter.check(given).text


@dataclass(frozen=True)
class NewConfig:
    """What a config is created with: checked when it is created; a secret is minted when none
    is given."""

    tenant_id: int  # whose config it is
    endpoint: str
    event_types: Sequence[str]
    name: str | None = None
    secret: str | None = None
    active: bool = True
    id: str | None = None
    max_in_flight: int | None = None
    rate_per_second: float | None = None
    ordering: Ordering = Ordering.UNORDERED
    block_on_failure: bool = True
    filter: Any = None  # as given (JSON); None: no filter

    def row(self) -> dict[str, Any]:
        """Return the checked values of the config's row, its secret minted if none is given."""
        secret = check_secret(self.secret) if self.secret else mint_secret()
        row = {
            "id": self.id,
            "name": self.name,
            "endpoint": check_endpoint(self.endpoint),
            "secret": secret,
            "event_types": check_event_types(self.event_types),
            "active": self.active,
            "ordering": Ordering(self.ordering).value,
            "block_on_failure": self.block_on_failure,
            "tenant_id": self.tenant_id,
            "filter": filter_text(self.filter),
        }
        health.check_max_in_flight(self.max_in_flight)
        health.check_rate(self.rate_per_second)
        return row


def numbered(error: InvalidInput, number: int, count: int) -> InvalidInput:
    """Return `error` naming the `number`th (from 1) of `count` configs created at once, as it
    is when there is one."""
    return InvalidInput(f"config {number}: {error}") if count > 1 else error


def create(pool: ConnectionPool, tenant_id: int, **fields: Any) -> tuple[Config, str]:
    """Create a config of tenant `tenant_id` with its cap and rate (the other fields of a
    NewConfig); return it and its secret."""
    return create_many(pool, [NewConfig(tenant_id, **fields)])[0]


def create_many(pool: ConnectionPool, new: Sequence[NewConfig]) -> list[tuple[Config, str]]:
    """Create the configs `new` with their caps and rates in one transaction, all or none;
    return each with its secret, in the order given. An invalid one of several is named by
    its place (`config 3: ...`, counted from 1). NotFound when a tenant is deleted or does
    not exist; InvalidInput when one would have more configs than its limit allows."""
    rows = []
    for number, config in enumerate(new, start=1):
        try:
            rows.append(config.row())
        except InvalidInput as error:
            raise numbered(error, number, len(new)) from None
    for row in rows:  # named here, so that each row is found again by its id
        row["id"] = row["id"] or str(uuid.uuid4())
    created = []
    with pool.transaction() as cursor:
        counts = Counter(config.tenant_id for config in new)
        cursor.execute(QUERIES["limited_tenants"], {"tenant_ids": list(counts)})
        for (tenant_id,) in sorted(cursor.fetchall()):
            cursor.execute(QUERIES["config_room"],
                           {"tenant_id": tenant_id, "adding": counts[tenant_id]})
            limit = as_dict(cursor)
            if limit is not None and not limit["room"]:
                raise InvalidInput(f"the tenant has {limit['configs']} configs and may have "
                                   f"{limit['max_configs']} (its maxConfigs); delete some or "
                                   "raise the limit")
        cursor.execute(QUERIES["insert_configs"], {
            "ids": [row["id"] for row in rows], "names": [row["name"] for row in rows],
            "endpoints": [row["endpoint"] for row in rows],
            "secrets": [row["secret"] for row in rows],
            "event_types": [json.dumps(row["event_types"]) for row in rows],
            "actives": [row["active"] for row in rows],
            "orderings": [row["ordering"] for row in rows],
            "blocks_on_failure": [row["block_on_failure"] for row in rows],
            "tenant_ids": [row["tenant_id"] for row in rows],
            "filters": [row["filter"] for row in rows]})
        inserted = {row["id"]: Config.from_row(row) for row in as_dicts(cursor)}
        if len(inserted) < len(rows):
            raise NotFound("tenant not found")
        for config, row in zip(new, rows, strict=True):
            stored = inserted[row["id"]]
            if config.max_in_flight is not None or config.rate_per_second is not None:
                health.set_limits(cursor, stored.id, max_in_flight=config.max_in_flight,
                                  rate_per_second=config.rate_per_second)
            created.append((stored, row["secret"]))
    _analyse_if_grown(pool, len(created))
    return created


def _analyse_if_grown(pool: ConnectionPool, added: int) -> None:
    """Analyse configs and their health rows at once when `added` configs are many (at least
    ANALYSE_AT_LEAST) and a tenth or more of those the statistics know of.

    Autovacuum would, but only at its next round (up to a minute later): until then the
    planner takes the configs just created for absent, and looks up an event's subscribers
    by reading every config instead of through the event types' index.
    """
    (known,) = pool.execute("configs_rows_analysed")[0]
    if added >= max(ANALYSE_AT_LEAST, ANALYSE_GROWTH * known):
        pool.execute("analyse_configs")


def get(pool: ConnectionPool, scope: Scope, id: str) -> Config | None:
    """Return the config `id`, or None if it does not exist, was deleted, or is not of
    `scope`."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_config"], {**scope.params(), "id": id})
        row = as_dict(cursor)
    return Config.from_row(row) if row else None


# Health states few configs are in, found through the held configs' index.
HELD_STATES = frozenset(HealthState) - {HealthState.HEALTHY}


@dataclass(frozen=True)
class ConfigFilter:
    """Which configs a listing shows: all by default; `search` is a piece of the name or the
    endpoint (any case), or the exact id."""

    active: bool | None = None
    health_state: str | None = None
    search: str | None = None
    tenant_id: int | None = None  # one tenant's configs (the scope narrows them too)

    def narrows(self) -> bool:
        """Whether some configs may not match (so a page can hold fewer than are listed)."""
        return any(value is not None for value in (self.active, self.health_state,
                                                   self.params()["search"]))

    def params(self) -> dict[str, Any]:
        search = self.search.strip() if self.search else None
        pattern = None
        if search:
            escaped = search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            pattern = f"%{escaped}%"
        held = self.health_state if self.health_state in HELD_STATES else None
        return {"active": self.active, "health": self.health_state, "search": search or None,
                "pattern": pattern, "by_health": held, "tenant": self.tenant_id}


def by_ids(pool: ConnectionPool, scope: Scope, ids: Sequence[str]) -> list[Config]:
    """Return those of the configs `ids` that exist, were not deleted and are of `scope`."""
    if not ids:
        return []
    with pool.transaction() as db:
        db.execute(QUERIES["get_configs"], {**scope.params(), "ids": list(ids)})
        return [Config.from_row(row) for row in as_dicts(db)]


# Configs next to the cursor a listing looks at before it asks the filter's own index: enough
# for a page whenever matches are common, few enough to cost a millisecond or two.
WALK = 2_000


def page(
    pool: ConnectionPool,
    scope: Scope,
    *,
    limit: int,
    filter: ConfigFilter = ConfigFilter(),
    cursor: tuple[datetime, str] | None = None,
    backwards: bool = False,
) -> list[Config]:
    """Return up to `limit` configs `filter` matches, newest first, after the `(created_at,
    id)` position; `backwards` walks the other way from it and returns the nearest first.

    The page is first looked for among the WALK configs next to the cursor (in order, so
    `limit` matches there are the page); only when they hold fewer (or the filter asks for a
    held health state, which few configs are in) are the matches found through the filter's
    own index (trigrams, the held configs' health index, inactive configs) and then ordered.
    So a common filter and a rare one both cost little at any number of configs.
    """
    cursor_time, cursor_id = cursor or (None, None)
    params = {**scope.params(), **filter.params(), "cursor_time": cursor_time,
              "cursor_id": cursor_id, "limit": limit, "walk": WALK}
    direction = "_backwards" if backwards else ""
    with pool.transaction() as db:
        rows: list[dict[str, Any]] = []
        if params["by_health"] is None:  # configs in a held state are few: no walk
            db.execute(QUERIES["list_configs_walk" + direction], params)
            rows = as_dicts(db)
        if len(rows) < limit and filter.narrows():
            db.execute(QUERIES["list_configs_matched" + direction], params)
            rows = as_dicts(db)
        return [Config.from_row(row) for row in rows]


def count(pool: ConnectionPool, scope: Scope, filter: ConfigFilter = ConfigFilter(), *,
          bound: int) -> tuple[int, bool]:
    """Return how many configs `filter` matches and whether that is exact: up to `bound` the
    count is exact; past it, the planner's estimate (never below `bound + 1`)."""
    params = {**scope.params(), **filter.params(), "bound": bound}
    with pool.transaction() as db:
        db.execute(QUERIES["count_configs"], params)
        exact = as_dict(db)["configs"]
        if exact <= bound:
            return exact, True
        db.execute(QUERIES["estimate_configs"], params)
        (plan,) = db.fetchone()  # EXPLAIN's JSON, decoded by psycopg2
    return max(int(plan[0]["Plan"]["Plan Rows"]), bound + 1), False


def update(
    pool: ConnectionPool,
    scope: Scope,
    id: str,
    *,
    endpoint: str | None = None,
    event_types: Sequence[str] | None = None,
    name: str | None = None,
    set_name: bool = False,
    max_in_flight: int | None = health.KEEP,
    rate_per_second: float | None = health.KEEP,
    ordering: Ordering | None = None,
    block_on_failure: bool | None = None,
    filter: Any = None,
    set_filter: bool = False,
) -> Config:
    """Change the endpoint, event types, name, cap, rate, ordering, failure policy or filter
    of a config (a cap or rate of `health.KEEP` stays, None clears it; a name or filter
    changes only with `set_name`/`set_filter`, None clearing it; None keeps the others);
    later attempts use them, later events meet the new filter. Switched to unordered, its
    waiting deliveries become due."""
    params = {
        **scope.params(),
        "id": id,
        "endpoint": None if endpoint is None else check_endpoint(endpoint),
        "event_types": None if event_types is None else check_event_types(event_types),
        "name": name,
        "set_name": set_name,
        "ordering": None if ordering is None else Ordering(ordering).value,
        "block_on_failure": block_on_failure,
        "filter": filter_text(filter) if set_filter else None,
        "set_filter": set_filter,
    }
    with pool.transaction() as cursor:
        if ordering is not None or block_on_failure is not None:
            lock_for_change(cursor, scope, [id], pending_of=[id])  # their turns may move
        cursor.execute(QUERIES["update_config"], params)
        config = _found(as_dict(cursor), id)
        health.set_limits(cursor, id, max_in_flight=max_in_flight,
                          rate_per_second=rate_per_second)
        return config


def activate(pool: ConnectionPool, scope: Scope, id: str, *,
             actor: str | None = None) -> Config:
    """Mark a config active; deliveries cancelled earlier stay cancelled."""
    with pool.transaction() as cursor:
        health.act_as(cursor, actor, "activated by an operator")
        cursor.execute(QUERIES["set_config_active"],
                       {**scope.params(), "id": id, "active": True})
        return _found(_without_changed(as_dict(cursor)), id)


def deactivate(pool: ConnectionPool, scope: Scope, id: str, *,
               reason: str = "deactivated by an operator",
               actor: str | None = None) -> ConfigChange:
    """Mark a config inactive, cancel its pending deliveries and record why, in one
    transaction."""
    with pool.transaction() as cursor:
        health.act_as(cursor, actor, reason)
        lock_for_change(cursor, scope, [id], pending_of=[id])
        change = deactivate_in(cursor, scope, id)
        if change.changed:
            health.note_reason(cursor, id, reason)
        return change


def lock_for_change(cursor: Any, scope: Scope, ids: Sequence[str], *,
                    pending_of: Sequence[str]) -> None:
    """In the caller's transaction, before changing configs `ids`: lock them, then the pending
    deliveries of `pending_of` (those whose change moves them), then their health rows, in
    the one lock order every statement follows (docs/architecture.md). Only the rows of
    `scope` are locked: naming another tenant's config holds up nothing of that tenant."""
    cursor.execute(QUERIES["lock_for_config_change"],
                   {**scope.params(), "configs": sorted(set(ids)),
                    "pending_of": sorted(set(pending_of))})


def deactivate_in(cursor: Any, scope: Scope, id: str) -> ConfigChange:
    """In the caller's transaction (whose actor and reason are set, and which took the locks
    of `lock_for_change`): mark a config inactive and cancel its pending deliveries. The
    caller then notes the reason on its health row (`health.note_reason`) if it changed."""
    cursor.execute(QUERIES["set_config_active"],
                   {**scope.params(), "id": id, "active": False})
    row = as_dict(cursor)
    config = _found(_without_changed(row), id)
    if not row["changed"]:
        return ConfigChange(config, 0, changed=False)
    cursor.execute(QUERIES["cancel_pending_deliveries_of_config"], {"id": id})
    return ConfigChange(config, cursor.rowcount)


def delete(pool: ConnectionPool, scope: Scope, id: str, *,
           actor: str | None = None) -> ConfigChange:
    """Delete a config (its row stays for history) and cancel its pending deliveries."""
    reason = "deleted by an operator"
    with pool.transaction() as cursor:
        health.act_as(cursor, actor, reason)
        lock_for_change(cursor, scope, [id], pending_of=[id])
        cursor.execute(QUERIES["delete_config"], {**scope.params(), "id": id})
        config = _found(as_dict(cursor), id)
        cursor.execute(QUERIES["cancel_pending_deliveries_of_config"], {"id": id})
        change = ConfigChange(config, cursor.rowcount)
        health.note_reason(cursor, id, reason)
        return change


def rotate_secret(
    pool: ConnectionPool, scope: Scope, id: str, *, grace_seconds: float,
    secret: str | None = None
) -> tuple[Config, str]:
    """Install a new secret (minted when none is given); the old ones sign during their grace.

    The current secret keeps signing for `grace_seconds`, alongside earlier rotated-out
    secrets whose grace has not ended (the newest `MAX_PREVIOUS_SECRETS` of them). A grace of
    0 revokes at once: every previous secret stops signing.
    """
    secret = check_secret(secret) if secret else mint_secret()
    with pool.transaction() as cursor:
        cursor.execute(
            QUERIES["rotate_config_secret"],
            {**scope.params(), "id": id, "secret": secret,
             "grace_seconds": float(grace_seconds), "keep": MAX_PREVIOUS_SECRETS},
        )
        return _found(as_dict(cursor), id), secret


def _without_changed(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return a `set_config_active` row without its `changed` flag (a copy)."""
    return None if row is None else {k: v for k, v in row.items() if k != "changed"}


def _found(row: dict[str, Any] | None, id: str) -> Config:
    if row is None:
        raise NotFound(f"config {id!r} not found")
    return Config.from_row(row)

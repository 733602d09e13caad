"""The object types of the API, each built from a `db/` row by `from_row`."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum, StrEnum

import strawberry
from strawberry.scalars import JSON

from db import config_filters, inspection, ordering, rates, webhook_body
from db import health as health_rows
from db.configs import Config as ConfigRow
from db.errors import InvalidInput
from db.event_keys import DIGEST_PREFIX, ENCODED_PREFIX, MAX_ORDERING_KEY_LENGTH
from db.health import Health as HealthRow
from db.rates import UNANSWERED_SECONDS, AttemptRate
from db.rejected import RejectedEvent as RejectedRow
from db.scope import Scope
from db.stalls import StalledPartition as StalledRow
from db.vocabulary import AttemptOutcome as OutcomeWord
from db.vocabulary import HealthChangeKind, Ordering, Status
from db.vocabulary import HealthState as HealthWord
from db.vocabulary import HeldBy as HeldByWord
from graphql_schema import cursors, tenancy
from graphql_schema.context import Info
from graphql_schema.filter_api import FilterStats
from graphql_schema.portal_api import PortalGrant
from graphql_schema.tenant_types import Tenant

# The API's name for `Status`, member for member: a value of one is equal to the other's.
DeliveryStatus = strawberry.enum(
    StrEnum("DeliveryStatus", [(status.name, status.value) for status in Status]),
    description="Where a delivery is in its lifecycle.")


# The API's name for `Ordering`, member for member.
DeliveryOrdering = strawberry.enum(
    StrEnum("DeliveryOrdering", [(ordering.name, ordering.value) for ordering in Ordering]),
    description="UNORDERED: each delivery on its own. PER_KEY: the deliveries of one ordering "
                "key are attempted one at a time, in the order their events were ingested.")


HeldBy = strawberry.enum(
    StrEnum("HeldBy", [(word.name, word.value) for word in HeldByWord]),
    description="What holds a pending delivery back: PAUSE (its config is paused), CIRCUIT "
                "(its config's circuit is open or half-open) or ORDERING_KEY (it waits for an "
                "earlier delivery of its key).")


@strawberry.type(description="Why a pending delivery is not sent although it may be due.")
class Hold:
    by: HeldBy
    since: datetime | None = strawberry.field(
        description="When the pause began or the circuit opened.")
    until: datetime | None = strawberry.field(
        description="When it may go: an open circuit's next probe. Null: until an operator "
                    "resumes the config, a probe answers, or the earlier delivery settles.")
    reason: str | None = strawberry.field(
        description="The pause's reason, or the failure that opened the circuit.")
    behind: strawberry.ID | None = strawberry.field(
        description="The earlier delivery of its ordering key it waits for.")

    @classmethod
    def from_row(cls, row: inspection.Hold | None) -> Hold | None:
        if row is None:
            return None
        return cls(by=HeldBy(row.by), since=row.since, until=row.until, reason=row.reason,
                   behind=None if row.behind is None else strawberry.ID(str(row.behind)))


@strawberry.type(description="A delivery without its payload, as listed.")
class DeliverySummary:
    id: strawberry.ID
    webhook_id: str = strawberry.field(description=(
        "The `webhook-id` header of its requests: the same across retries and replays, and "
        "unique beyond this installation. Receivers deduplicate on it."))
    event_id: str
    event_type: str
    config_id: strawberry.ID
    config_name: str | None = strawberry.field(description="The config's name, if it has one.")
    status: DeliveryStatus
    attempt_count: int = strawberry.field(description=(
        "Requests sent in the current generation (an attempt the SSRF guard blocked sent none "
        "and is not counted)."))
    replay_generation: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    ordering_key: str | None = strawberry.field(default=None, description=(
        "Its event's ordering key: the Kafka message key or publishEvent's `orderingKey`, as "
        f"text when it is UTF-8 of at most {MAX_ORDERING_KEY_LENGTH} characters without NUL, "
        f"else encoded (`{ENCODED_PREFIX}` and its bytes in base64, or `{DIGEST_PREFIX}` and "
        "their hex SHA-256 when longer); null without one."))
    held_by: Hold | None = strawberry.field(default=None, description=(
        "What holds this pending delivery back (its config's pause or circuit, or an earlier "
        "delivery of its key), since and until when; null when nothing does: it is sent when "
        "due."))
    tenant_id: strawberry.Private[int] = 0

    @strawberry.field(description="The tenant it belongs to (its config's).")
    def tenant(self, info: Info) -> Tenant:
        return Tenant.from_row(tenancy.by_id(info, self.tenant_id))

    @classmethod
    def fields_of(cls, row: inspection.DeliverySummary) -> dict:
        return {
            "id": strawberry.ID(str(row.id)),
            "webhook_id": row.webhook_id,
            "event_id": row.event_id,
            "event_type": row.event_type,
            "config_id": strawberry.ID(row.config_id),
            "config_name": row.config_name,
            "status": DeliveryStatus(row.status),
            "attempt_count": row.attempt_count,
            "replay_generation": row.replay_generation,
            "next_attempt_at": row.next_attempt_at,
            "last_status_code": row.last_status_code,
            "last_error": row.last_error,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "ordering_key": row.ordering_key,
            "held_by": Hold.from_row(row.hold),
            "tenant_id": row.tenant_id,
        }

    @classmethod
    def from_row(cls, row: inspection.DeliverySummary) -> DeliverySummary:
        return cls(**cls.fields_of(row))


AttemptOutcome = strawberry.enum(
    StrEnum("AttemptOutcome", [(outcome.name, outcome.value) for outcome in OutcomeWord]),
    description="What one attempt came to: SUCCESS (a 2xx), HTTP_ERROR (any other answer), "
                "TIMEOUT, NETWORK_ERROR (refused, reset, TLS or DNS failure), BLOCKED (never "
                "sent: the address is refused) or INTERRUPTED (the worker stopped first).")

@strawberry.type(description="One HTTP call of a delivery; append-only.")
class Attempt:
    id: strawberry.ID
    attempt_number: int
    replay_generation: int
    endpoint: str
    outcome: AttemptOutcome
    status_code: int = strawberry.field(description="0 when no response arrived.")
    duration_ms: int
    response_excerpt: str | None
    error: str | None
    created_at: datetime
    request_headers: JSON | None = strawberry.field(description=(
        "The headers the request carried, name -> value: webhook-id, webhook-timestamp, "
        "webhook-signature, webhook-attempt, webhook-replay-generation, traceparent and "
        "tracestate. Content-Type, User-Agent and Accept-Encoding, the same in every request, "
        "are not kept. Null for attempts recorded before headers were kept, and for "
        "interrupted ones."))

    @classmethod
    def from_row(cls, row: inspection.Attempt) -> Attempt:
        return cls(**{**vars(row), "id": strawberry.ID(str(row.id))})


@strawberry.type(description="A delivery with its event's payload and its attempts.")
class Delivery(DeliverySummary):
    payload: JSON
    occurred_at: datetime = strawberry.field(description="When the event occurred.")
    event_key: str | None = strawberry.field(
        description="The Kafka message key of the event, base64-encoded; null without one.")
    traceparent: str | None = strawberry.field(
        description="The W3C trace context the producer sent with the event; every attempt "
                    "is a child span of it.")
    tracestate: str | None = None
    request_body: str = strawberry.field(
        description="The JSON body every attempt of it sends, byte for byte as signed: "
                    '`{"id", "type", "timestamp", "data"}` with the payload as stored.')

    @strawberry.field(description="Its newest `last` attempts (1 to 1000; every generation "
                                  "counts), oldest first. A delivery replayed many times has "
                                  "up to its attempt budget per generation.")
    def attempts(self, info: Info, last: int = 100) -> list[Attempt]:
        if not 1 <= last <= 1000:
            raise InvalidInput("last: must be between 1 and 1000")
        rows = inspection.attempts(info.context.pool, info.context.scope, int(self.id),
                                   last=last)
        return [Attempt.from_row(row) for row in rows]

    @classmethod
    def from_detail(cls, row: inspection.DeliveryDetail) -> Delivery:
        key = None if row.message_key is None else base64.b64encode(row.message_key).decode()
        return cls(**cls.fields_of(row), payload=row.payload, occurred_at=row.occurred_at,
                   event_key=key, traceparent=row.trace_parent, tracestate=row.trace_state,
                   request_body=webhook_body.body(row.event_id, row.event_type, row.occurred_at,
                                                  row.payload_text).decode())


HealthState = strawberry.enum(
    StrEnum("HealthState", [(state.name, state.value) for state in HealthWord]),
    description="A config's endpoint health, apart from its `active` flag.")


@strawberry.type(description="Endpoint health: the operator's pause and the circuit breaker. "
                             "While PAUSED, OPEN or HALF_OPEN, deliveries stay pending, nothing "
                             "is cancelled and the retry window's clock stops.")
class ConfigHealth:
    state: HealthState = strawberry.field(
        description="PAUSED whatever the circuit; else the circuit: HEALTHY (closed), OPEN "
                    "(nothing attempted until the next probe) or HALF_OPEN (one probe in "
                    "flight).")
    consecutive_failures: int = strawberry.field(
        description="Retryable failures in a row (408, 429, 5xx, network errors, timeouts).")
    opened_at: datetime | None = strawberry.field(description="When the circuit opened.")
    next_probe_at: datetime | None = strawberry.field(
        description="When an open circuit sends its next probe (one delivery).")
    last_failure: str | None = strawberry.field(description="The last retryable failure.")
    last_failure_at: datetime | None
    paused_at: datetime | None = strawberry.field(description="When an operator paused it.")
    reason: str | None = strawberry.field(
        description="Why the health or activity last changed (e.g. `endpoint answered 410 "
                    "Gone`).")
    changed_at: datetime
    in_flight: int = strawberry.field(description="Attempts in flight, across all workers.")

    @classmethod
    def from_row(cls, row: HealthRow) -> ConfigHealth:
        return cls(state=HealthState(row.state), consecutive_failures=row.consecutive_failures,
                   opened_at=row.opened_at, next_probe_at=row.next_probe_at,
                   last_failure=row.last_failure, last_failure_at=row.last_failure_at,
                   paused_at=row.paused_at, reason=row.reason, changed_at=row.changed_at,
                   in_flight=row.in_flight)


@strawberry.type(description="A subscriber: where to POST which event types. No secret here.")
class Config:
    id: strawberry.ID
    name: str | None
    endpoint: str
    event_types: list[str]
    active: bool
    created_at: datetime
    updated_at: datetime
    previous_secrets_expire_at: list[datetime] = strawberry.field(description=(
        "Until when each rotated-out signing key still signs alongside the current one, "
        "newest first; only those that still do. The keys themselves are never shown."))
    ordering: DeliveryOrdering = strawberry.field(description="How its deliveries are ordered.")
    block_on_failure: bool = strawberry.field(description=(
        "Ordered: whether a failed delivery holds its key until it is replayed and succeeds."))
    filter: JSON | None = strawberry.field(default=None, description=(
        "The match an event's payload must pass to be delivered to it (MongoDB's query "
        "operators over dotted paths, docs/filters.md); null: every event of its types."))
    tenant_id: strawberry.Private[int] = 0
    health_row: strawberry.Private[HealthRow | None] = None
    # hours → the rates of the configs listed with this one (loaded once for all of them)
    rates_of_page: strawberry.Private[Callable[[int], dict[str, AttemptRate]] | None] = None

    @strawberry.field(description=f"Attempts and successes of this config in the last `hours` "
                                  f"(1 to {rates.MAX_HOURS}), counted in five-minute periods: "
                                  "exact for every config, the window's first period counted "
                                  "whole.")
    def recent_attempts(self, info: Info, hours: int = 24) -> RecentAttempts:
        if not 1 <= hours <= MAX_RATE_HOURS:
            raise InvalidInput(f"hours: must be between 1 and {MAX_RATE_HOURS}")
        if self.rates_of_page is not None:
            found = self.rates_of_page(hours)[self.id]
        else:
            found = rates.recent(info.context.pool, info.context.scope, [self.id],
                                 since=rate_window(hours))[self.id]
        return RecentAttempts(hours=hours, attempts=found.attempts, succeeded=found.succeeded)

    @strawberry.field(description="Ordered: the keys a failed delivery holds now, by key; "
                                  "page with `first` (1 to 1000) and `after` (a key's cursor).")
    def blocked_keys(self, info: Info, first: int = 100,
                     after: str | None = None) -> BlockedKeyConnection:
        if not 1 <= first <= 1000:
            raise InvalidInput("first: must be between 1 and 1000")
        scope = info.context.scope
        rows = ordering.blocked_keys(info.context.pool, scope, self.id, limit=first + 1,
                                     after=cursors.key_after("blockedKeys", scope, after))
        edges = [BlockedKeyEdge(cursor=cursors.encode("blockedKeys", scope,
                                                      key=row.ordering_key),
                                node=BlockedKey.from_row(row)) for row in rows[:first]]
        return BlockedKeyConnection(edges=edges, has_next_page=len(rows) > first,
                                    end_cursor=edges[-1].cursor if edges else None)

    @strawberry.field(description="Its health history, newest first: every pause, resume, "
                                  "circuit transition (opened, probing, closed), "
                                  "deactivation (by an operator, or a 410 Gone), activation "
                                  "and deletion, with who and why; page with `first` (1 to "
                                  "1000) and `after`.")
    def health_changes(self, info: Info, first: int = 50,
                       after: str | None = None) -> HealthChangeConnection:
        if not 1 <= first <= 1000:
            raise InvalidInput("first: must be between 1 and 1000")
        scope = info.context.scope
        before = cursors.id_after("healthChanges", scope, after)
        rows = health_rows.changes(info.context.pool, scope, self.id, limit=first + 1,
                                   before=before)
        edges = [HealthChangeEdge(cursor=cursors.encode("healthChanges", scope, id=row.id),
                                  node=HealthChange.from_row(row)) for row in rows[:first]]
        return HealthChangeConnection(edges=edges, has_next_page=len(rows) > first,
                                      end_cursor=edges[-1].cursor if edges else None)

    @strawberry.field(description="What its filter kept from it: the events of its types the "
                                  "filter rejected.")
    def filter_stats(self, info: Info) -> FilterStats:
        return FilterStats.from_row(config_filters.counts(
            info.context.pool, info.context.scope, [self.id])[self.id])

    @strawberry.field(description="The tenant it belongs to.")
    def tenant(self, info: Info) -> Tenant:
        return Tenant.from_row(tenancy.by_id(info, self.tenant_id))

    @strawberry.field(description="Pause and circuit breaker state.")
    def health(self, info: Info) -> ConfigHealth:
        return ConfigHealth.from_row(self._health(info))

    @strawberry.field(description="Most attempts in flight at once across all workers; null: "
                                  "no such bound (each worker sends at most "
                                  "WEBHOOKS_ENDPOINT_CONCURRENCY at once).")
    def max_in_flight(self, info: Info) -> int | None:
        return self._health(info).max_in_flight

    @strawberry.field(description="Most attempts started per second across all workers; "
                                  "null: no limit.")
    def rate_per_second(self, info: Info) -> float | None:
        return self._health(info).rate_per_second

    def _health(self, info: Info) -> HealthRow:
        if self.health_row is None:
            self.health_row = health_rows.of_configs(info.context.pool, info.context.scope,
                                                     [self.id])[self.id]
        return self.health_row

    @classmethod
    def from_row(cls, row: ConfigRow, health: HealthRow | None = None,
                 rates_of_page: Callable[[int], dict[str, AttemptRate]] | None = None) -> Config:
        return cls(id=strawberry.ID(row.id), name=row.name, endpoint=row.endpoint,
                   event_types=list(row.event_types), active=row.active,
                   created_at=row.created_at, updated_at=row.updated_at,
                   previous_secrets_expire_at=list(row.previous_secrets_expire_at),
                   ordering=DeliveryOrdering(row.ordering.value),
                   block_on_failure=row.block_on_failure, filter=row.filter,
                   tenant_id=row.tenant_id,
                   health_row=health, rates_of_page=rates_of_page)


@strawberry.type(description="An ordering key held by a failed delivery: nothing later of "
                             "it is sent until that delivery is replayed and succeeds, or "
                             "skipped.")
class BlockedKey:
    ordering_key: str
    delivery_id: strawberry.ID = strawberry.field(description="The failed delivery holding it.")
    sequence: int
    since: datetime = strawberry.field(description="When that delivery failed.")
    last_status_code: int | None
    last_error: str | None
    waiting: int = strawberry.field(description=(
        f"Deliveries of the key waiting behind it, counted up to {ordering.WAITING_BOUND:,}."))

    @classmethod
    def from_row(cls, row: ordering.BlockedKey) -> BlockedKey:
        return cls(**{**vars(row), "delivery_id": strawberry.ID(str(row.delivery_id))})


@strawberry.type
class BlockedKeyEdge:
    cursor: str
    node: BlockedKey


HealthChangeWord = strawberry.enum(
    StrEnum("HealthChangeWord", [(word.name, word.value) for word in HealthChangeKind]),
    name="HealthChangeKind",
    description="PAUSED, RESUMED; the circuit OPENED, PROBING (a probe in flight), CLOSED; "
                "DEACTIVATED, ACTIVATED, DELETED.")


@strawberry.type(description="One change of a config's health or activity.")
class HealthChange:
    id: strawberry.ID
    changed_at: datetime
    change: HealthChangeWord
    actor: str | None = strawberry.field(
        description="Who: an API token's name, a portal session (`portal-session:<n>`) or "
                    "`cli:<user>`; null: the service itself. A tenant's token or portal "
                    "session reads `platform` for anyone not its own (the platform's tokens "
                    "and on-call commands).")
    reason: str | None = strawberry.field(
        description="Why: the operator's reason, or the failure or answer that caused it.")

    @classmethod
    def from_row(cls, row: health_rows.HealthChange) -> HealthChange:
        return cls(id=strawberry.ID(str(row.id)), changed_at=row.changed_at,
                   change=HealthChangeWord(row.change), actor=row.actor, reason=row.reason)


@strawberry.type
class HealthChangeEdge:
    cursor: str
    node: HealthChange


@strawberry.type(description="A config's health history, newest first.")
class HealthChangeConnection:
    edges: list[HealthChangeEdge]
    has_next_page: bool
    end_cursor: str | None


@strawberry.type(description="Ordering keys held by a failure, by key.")
class BlockedKeyConnection:
    edges: list[BlockedKeyEdge]
    has_next_page: bool
    end_cursor: str | None


@strawberry.type(description="A config's attempts over a recent window.")
class RecentAttempts:
    hours: int
    attempts: int
    succeeded: int

    @strawberry.field(description="succeeded / attempts; null without attempts.")
    def success_rate(self) -> float | None:
        return self.succeeded / self.attempts if self.attempts else None


MAX_RATE_HOURS = rates.MAX_HOURS  # the counts of older periods are deleted


def rate_window(hours: int) -> datetime:
    """Return the start of a window of the last `hours`."""
    return datetime.now(UTC) - timedelta(hours=hours)


def page_rates(pool, scope: Scope,
               config_ids: list[str]) -> Callable[[int], dict[str, AttemptRate]]:
    """Return a loader of the rates of a page of configs, one query per window asked for."""
    return functools.cache(lambda hours: rates.recent(pool, scope, config_ids,
                                                      since=rate_window(hours)))


@strawberry.type(description="A config a person should look at, and why.")
class ConfigAttention:
    config: Config
    state: HealthState
    failures: int = strawberry.field(description="Failed attempts in the window (all that "
                                                 "did not succeed).")
    attempts: int = strawberry.field(description="Attempts in the window.")
    last_failure: str | None
    last_failure_at: datetime | None
    reason: str | None = strawberry.field(description="Why its health last changed.")
    unanswered: int = strawberry.field(description=(
        f"Deliveries claimed more than {UNANSWERED_SECONDS} s ago and still without an answer "
        "(an endpoint holding its requests open shows here before its first timeout; a "
        "claim waiting in its worker behind its config's slow sends counts too)."))
    unanswered_since: datetime | None = strawberry.field(
        description="When the oldest of those attempts was claimed.")


@strawberry.type(description="A broker message that could not become an event.")
class RejectedEvent:
    id: strawberry.ID
    topic: str
    partition: int
    offset: str = strawberry.field(description="The broker offset (a 64-bit integer, as text).")
    reason: str
    raw: str | None = strawberry.field(description="The message's bytes, base64-encoded.")
    created_at: datetime
    tenant_uid: str | None = strawberry.field(
        default=None, description="The tenant it named, when no such tenant existed.")
    replayed_at: datetime | None = strawberry.field(
        default=None, description="When it was ingested after all (replayRejectedEvent).")

    @classmethod
    def from_row(cls, row: RejectedRow) -> RejectedEvent:
        raw = None if row.raw is None else base64.b64encode(row.raw).decode()
        return cls(id=strawberry.ID(str(row.id)), topic=row.topic, partition=row.partition,
                   offset=str(row.offset), reason=row.reason, raw=raw, created_at=row.created_at,
                   tenant_uid=row.tenant_uid, replayed_at=row.replayed_at)


@strawberry.type(description="A Kafka partition a worker holds because it cannot decode the "
                             "batch at `offset` (an unknown codec, corrupt bytes); nothing past "
                             "it is read or skipped until the partition is read again.")
class StalledPartition:
    group_id: str
    topic: str
    partition: int
    offset: str = strawberry.field(description="The broker offset (a 64-bit integer, as text).")
    reason: str = strawberry.field(description="The Kafka client's error.")
    worker: str = strawberry.field(description="The worker holding the partition.")
    since: datetime

    @classmethod
    def from_row(cls, row: StalledRow) -> StalledPartition:
        return cls(group_id=row.group_id, topic=row.topic, partition=row.partition,
                   offset=str(row.offset), reason=row.reason, worker=row.worker,
                   since=row.since)


@strawberry.type
class StatusCount:
    status: DeliveryStatus
    count: int = strawberry.field(description="Exact up to 10,000, then an estimate from the "
                                              "database's table statistics.")
    estimated: bool = strawberry.field(description="True when `count` is an estimate.")


@strawberry.type(description="Cheap on any table size: each count is exact up to 10,000 rows, "
                             "then estimated.")
class Stats:
    by_status: list[StatusCount]
    queue_depth: int = strawberry.field(description="Pending deliveries (the PENDING count), "
                                                    "capped at 1,000,000.")
    oldest_due_age_seconds: float | None = strawberry.field(
        description="Seconds the longest-waiting config that could be sent to now has waited "
                    "(its oldest due delivery, its rate limit's next slot or an open circuit's "
                    "probe time); held deliveries (a pause, a probe in flight) never count. "
                    "Null if nothing could be sent now.")
    rejected_events: int = strawberry.field(description="Broker messages rejected.")
    stalled_partitions: list[StalledPartition] = strawberry.field(
        description="Kafka partitions held because their next batch cannot be decoded.")
    blocked_keys: int = strawberry.field(
        default=0, description="Ordering keys held by a failed delivery, over every ordered "
                               "config (Config.blockedKeys lists them).")


@strawberry.type
class OutcomeCount:
    outcome: AttemptOutcome
    count: int


@strawberry.type(description="Attempts that started within one time bucket.")
class AttemptBucket:
    start: datetime
    attempts: int
    succeeded: int
    outcomes: list[OutcomeCount]

    @strawberry.field(description="succeeded / attempts; null without attempts.")
    def success_rate(self) -> float | None:
        return self.succeeded / self.attempts if self.attempts else None


@strawberry.type(description="The attempts of one config within the window.")
class ConfigAttempts:
    config_id: strawberry.ID
    config_name: str | None
    attempts: int
    succeeded: int

    @strawberry.field(description="succeeded / attempts; null without attempts.")
    def success_rate(self) -> float | None:
        return self.succeeded / self.attempts if self.attempts else None


@strawberry.type(description="Attempts by outcome per time bucket and per config, for charts.")
class AttemptHistory:
    since: datetime
    bucket_seconds: int
    buckets: list[AttemptBucket] = strawberry.field(description="Oldest first, every bucket "
                                                                "of the window, empty ones too.")
    configs: list[ConfigAttempts] = strawberry.field(description=(
        "Most attempts first. With `configIds`, each of those configs' totals are exact "
        "(counted in five-minute periods, the window's first counted whole); without, they "
        "come from the attempts read, as the buckets do."))
    complete: bool = strawberry.field(
        description="False when only the newest attempts were read (the scan is bounded) and "
                    "they do not reach back to `since`: older buckets then count too few.")


@strawberry.enum(description="What an API token may do.")
class Role(Enum):
    VIEWER = "viewer"
    OPERATOR = "operator"


@strawberry.type(description="The caller, as its token says.")
class Me:
    role: Role
    can_mutate: bool = strawberry.field(description="Operator tokens only.")
    tenant_uid: str | None = strawberry.field(
        default=None, description="The tenant the token acts for; null: the whole platform.")
    portal: PortalGrant | None = strawberry.field(
        default=None, description="A portal session's grant; null for an API token.")

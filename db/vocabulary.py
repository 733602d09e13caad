"""The words every layer shares: the statuses of a delivery, the outcomes of an attempt, why a
broker message was rejected, the prefixes of secrets and tokens, what a portal session may
do, how deliveries are ordered, a config's health and its breaker's states, an attempt's
verdict, what a replay did, what holds a pending delivery back, what the platform hears of
its customers' endpoints.

Constants only, importing nothing: any module above `db/` may use them without pulling in
the database driver.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Where a delivery is in its lifecycle; `deliveries.status` holds the value."""

    PENDING = "pending"  # waiting for its next attempt, due at `next_attempt_at`
    DELIVERING = "delivering"  # claimed by a worker; an attempt is under way
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # out of retries or refused for good; an operator may replay it
    CANCELLED = "cancelled"  # its config was deactivated or deleted before it succeeded


class AttemptOutcome(StrEnum):
    """How an attempt ended; `delivery_attempts.outcome` holds the value."""

    SUCCESS = "success"  # a 2xx answer
    HTTP_ERROR = "http_error"  # any other answer
    TIMEOUT = "timeout"  # no full answer within WEBHOOKS_HTTP_TIMEOUT
    NETWORK_ERROR = "network_error"  # no answer: refused, reset, TLS or DNS failure
    BLOCKED = "blocked"  # never sent: the endpoint resolved to an address the SSRF guard refuses
    INTERRUPTED = "interrupted"  # the worker stopped before the answer came


class PoisonKind(StrEnum):
    """Why a broker message can never become an event (the rejection metric's `reason`)."""

    TOMBSTONE = "tombstone"  # no value
    TOO_LARGE = "too_large"  # over WEBHOOKS_MAX_PAYLOAD
    INVALID_UTF8 = "invalid_utf8"
    NOT_AN_OBJECT = "not_an_object"  # JSON, but not an object
    NO_TYPE = "no_type"  # no string `type`
    INVALID_EVENT = "invalid_event"  # a field of the envelope is unusable
    INVALID_JSON = "invalid_json"
    INVALID_ID = "invalid_id"  # an `id` that is neither a string nor a number
    UNREADABLE = "unreadable"  # a message the envelope rules missed
    UNSTORABLE = "unstorable"  # the database refused it
    INVALID_TENANT = "invalid_tenant"  # a tenant uid that cannot name one, or named twice
    UNKNOWN_TENANT = "unknown_tenant"  # no live tenant has the uid: replayable once one does
    SCHEMA_MISMATCH = "schema_mismatch"  # the payload fails its type's schema in the catalog
    UNKNOWN_TYPE = "unknown_type"  # the catalog is strict and has no such type


REPLAYABLE = (Status.FAILED, Status.PENDING)  # what a replay changes (failed: a new generation)
IN_HAND = (Status.PENDING, Status.DELIVERING)  # the work queue, not yet finished

SECRET_PREFIX = "whsec_"  # a config's signing secret (Standard Webhooks): whsec_<base64 key>
TOKEN_PREFIX = "whk_"  # an API bearer token
PORTAL_TOKEN_PREFIX = "whp_"  # a portal session's bearer token (short-lived, one tenant)
# Who acted, as a tenant reads a change: a portal session is named by this and its number;
# anyone not the tenant's own (a platform-wide token, an on-call command) by PLATFORM_ACTOR.
PORTAL_ACTOR_PREFIX = "portal-session:"
PLATFORM_ACTOR = "platform"


class PortalCapability(StrEnum):
    """What a portal session may do besides acting for its tenant; `portal_sessions.capabilities`
    holds the values."""

    READ = "read"  # every query: endpoints, deliveries, attempts, health, the catalog
    MANAGE_ENDPOINTS = "manage_endpoints"  # create, change, pause, resume and delete endpoints
    REPLAY = "replay"  # replay deliveries, one or in bulk, and skip a failed one
    ROTATE_SECRET = "rotate_secret"  # rotate an endpoint's signing secret
    SEND_EXAMPLE = "send_example"  # publish a catalog example of a type to its own tenant


class Ordering(StrEnum):
    """How a config's deliveries are ordered."""

    UNORDERED = "unordered"  # each delivery on its own (the default)
    PER_KEY = "per_key"  # those of one ordering key one at a time, in ingestion order


class HealthState(StrEnum):
    """What a config's health says: paused by an operator, or its circuit breaker's state."""

    HEALTHY = "healthy"  # the circuit is closed: attempts go out
    PAUSED = "paused"  # an operator paused it: nothing is attempted, nothing is cancelled
    OPEN = "open"  # the breaker opened: nothing is attempted until the next probe
    HALF_OPEN = "half_open"  # one probe is in flight


class CircuitState(StrEnum):
    """The breaker's own states, as its transitions (logs, metrics) name them."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Verdict(StrEnum):
    """What one attempt says of its endpoint's health, for the breaker."""

    SUCCESS = "success"  # a 2xx: the endpoint works
    FAILURE = "failure"  # a 5xx, 408, 429, timeout or network error: it may be down
    NEUTRAL = "neutral"  # an answer for good (other 4xx, 3xx) or a request that never left
    NONE = "none"  # no attempt was made (a claim handed back): its slot is freed, nothing said


class ReplayAction(StrEnum):
    """What a replay did to a delivery."""

    REPLAYED = "REPLAYED"  # a failed delivery got a new generation, due now
    EXPEDITED = "EXPEDITED"  # a pending delivery was made due now


class HeldBy(StrEnum):
    """What holds a pending delivery back (`delivery_hold` in the database says which)."""

    PAUSE = "pause"  # its config is paused: until an operator resumes it
    CIRCUIT = "circuit"  # its config's circuit is open (until the probe) or half-open
    ORDERING_KEY = "ordering_key"  # it waits for an earlier delivery of its ordering key


class HealthChangeKind(StrEnum):
    """What one row of a config's health history records (`config_health_changes.change`)."""

    PAUSED = "paused"
    RESUMED = "resumed"
    OPENED = "opened"  # the circuit opened (or reopened after a failed probe)
    PROBING = "probing"  # a probe is in flight (half-open)
    CLOSED = "closed"  # the circuit closed: a probe succeeded, or an operator reset it
    DEACTIVATED = "deactivated"  # by an operator, or by the service on a 410 Gone
    ACTIVATED = "activated"
    DELETED = "deleted"


class OperationalEvent(StrEnum):
    """What the platform hears of its customers' endpoints: the types of the events published to
    the operational tenant (`operational_events.type` holds the value)."""

    ENDPOINT_DISABLED = "endpoint.disabled"  # a 410 Gone, or an operator, deactivated a config
    ENDPOINT_CIRCUIT_OPENED = "endpoint.circuit_opened"  # its circuit opened (from closed)
    ENDPOINT_RECOVERED = "endpoint.recovered"  # its circuit closed again (probe or reset)
    DELIVERY_EXHAUSTED = "delivery.exhausted"  # a delivery failed for good: its budget ran out
    ORDERING_KEY_BLOCKED = "ordering.key_blocked"  # a failed delivery now holds its ordering key

"""One frozen settings object, read from environment variables and the matching CLI flags.

Every setting has an environment variable; its flag is the variable's name without the
`WEBHOOKS_` prefix, lower-cased, with hyphens (`WEBHOOKS_MIN_BACKOFF` <-> `--min-backoff`,
`DATABASE_URL` <-> `--database-url`). A flag wins over the environment, which wins over the
default. Each default is written once below, in the unit its parser reads
(service.runtime.setting_parsers); service.commands.setting_flags gives each command its
flags.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from db.catalog import CatalogMode
from db.pool import ConnectionPool, Pooler
from service.policy.claim_age import HOLD, RECORD_MARGIN, shortest_claim_timeout
from service.policy.classify import DEFAULT_RETRYABLE_TEXT, parse_status_codes
from service.policy.durations import format_duration, parse_duration, parse_size
from service.runtime.setting_parsers import (
    int_between,
    member_of,
    one_of,
    parse_bool,
    parse_cap,
    parse_csp_sources,
    parse_csv,
    parse_dsn,
    parse_origin_url,
    parse_ratio,
    parse_tenant_uid,
    parse_text,
)


class SettingsError(ValueError):
    """A setting has a value the service cannot run with."""


def _setting(
    env: str,
    default: str | None,
    parse: Callable[[str], Any],
    help: str,
    aliases: tuple[str, ...] = (),
) -> Any:
    value = None if default is None else parse(default)
    return field(
        default=value,
        metadata={"env": env, "default": default, "parse": parse, "help": help, "aliases": aliases},
    )


@dataclass(frozen=True)
class Settings:
    """Every tunable of the service; build with `Settings.load()`."""

    database_url: str | None = _setting("DATABASE_URL", None, parse_dsn, "PostgreSQL DSN")
    database_direct_url: str | None = _setting(
        "WEBHOOKS_DATABASE_DIRECT_URL", None, parse_dsn,
        "a direct URL to the same database, for what needs a session of its own (LISTEN, "
        "migrations, the migration and retention locks) when DATABASE_URL is a "
        "transaction-mode pooler",
    )
    database_pooler: Pooler = _setting(
        "WEBHOOKS_DATABASE_POOLER", "auto", member_of(Pooler),
        "what DATABASE_URL reaches: none (PostgreSQL itself), transaction (a transaction-mode "
        "pooler such as PgBouncer) or auto (found out for each connection)",
    )
    port: int = _setting("PORT", "8000", int_between(1, 65535), "web listen port")
    retry_period: float = _setting(
        "WEBHOOKS_RETRY_PERIOD", "3s", parse_duration,
        "dispatcher poll fallback between NOTIFY wake-ups", ("--retry-period",),
    )
    retry_batch_size: int = _setting(
        "WEBHOOKS_RETRY_BATCH_SIZE", "50", int_between(1, 10_000),
        "most deliveries claimed by one claim statement", ("--retry-batch-size",),
    )
    dispatch_concurrency: int = _setting(
        "WEBHOOKS_DISPATCH_CONCURRENCY", "50", int_between(1, 10_000),
        "in-flight attempts per worker process",
    )
    endpoint_concurrency: int | None = _setting(
        "WEBHOOKS_ENDPOINT_CONCURRENCY", "auto", parse_cap,
        "requests of one config each worker sends at once (auto: half of "
        "WEBHOOKS_DISPATCH_CONCURRENCY); a config's maxInFlight bounds it across all workers",
    )
    endpoint_ramp: float = _setting(
        "WEBHOOKS_ENDPOINT_RAMP", "30s", parse_duration,
        "time for a config's cap to grow back from 1 after a resume or a closed circuit",
    )
    circuit_failures: int = _setting(
        "WEBHOOKS_CIRCUIT_FAILURES", "20", int_between(0, 1_000_000),
        "consecutive retryable failures that open a config's circuit (0: no breaker)",
    )
    circuit_failure_ratio: float = _setting(
        "WEBHOOKS_CIRCUIT_FAILURE_RATIO", "0.5", parse_ratio,
        "share of failed attempts within the window that opens the circuit",
    )
    circuit_window: float = _setting(
        "WEBHOOKS_CIRCUIT_WINDOW", "1m", parse_duration, "window of the failure ratio",
    )
    circuit_min_volume: int = _setting(
        "WEBHOOKS_CIRCUIT_MIN_VOLUME", "100", int_between(1, 1_000_000),
        "fewest attempts within the window before the failure ratio counts",
    )
    circuit_probe_interval: float = _setting(
        "WEBHOOKS_CIRCUIT_PROBE_INTERVAL", "30s", parse_duration,
        "time from opening to the first probe; each failed probe doubles it",
    )
    circuit_max_probe_interval: float = _setting(
        "WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL", "10m", parse_duration,
        "longest time between probes of an open circuit",
    )
    listen_notify: bool = _setting(
        "WEBHOOKS_LISTEN_NOTIFY", "true", parse_bool,
        "wake the dispatcher by LISTEN/NOTIFY (false: poll every retry period only)",
    )
    min_backoff: float = _setting(
        "WEBHOOKS_MIN_BACKOFF", "1m", parse_duration, "first retry delay",
        ("--min-backoff-delay",),
    )
    max_backoff: float = _setting(
        "WEBHOOKS_MAX_BACKOFF", "1h", parse_duration, "longest retry delay",
        ("--max-backoff-delay",),
    )
    max_attempts: int = _setting(
        "WEBHOOKS_MAX_ATTEMPTS", "15", int_between(1, 1000), "attempts per retry generation"
    )
    retry_window: float = _setting(
        "WEBHOOKS_RETRY_WINDOW", "10h", parse_duration,
        "retry generation length from its first attempt", ("--abort-after",),
    )
    retry_after_cap: float = _setting(
        "WEBHOOKS_RETRY_AFTER_CAP", "6h", parse_duration, "longest honoured Retry-After"
    )
    backoff_strategy: str = _setting(
        "WEBHOOKS_BACKOFF_STRATEGY", "exponential", one_of("exponential", "linear", "fixed"),
        "how retry delays grow",
    )
    jitter: str = _setting(
        "WEBHOOKS_JITTER", "none", one_of("none", "full", "equal", "decorrelated"),
        "randomisation of retry delays",
    )
    retryable_status_codes: frozenset[int] = _setting(
        "WEBHOOKS_RETRYABLE_STATUS_CODES", DEFAULT_RETRYABLE_TEXT, parse_status_codes,
        "response codes retried later (codes or classes such as 5xx; network errors always "
        "are); any other non-2xx fails the delivery",
    )
    http_timeout: float = _setting(
        "WEBHOOKS_HTTP_TIMEOUT", "30s", parse_duration, "timeout of one attempt"
    )
    claim_timeout: float = _setting(
        "WEBHOOKS_CLAIM_TIMEOUT", "5m", parse_duration, "age after which a claim is stale"
    )
    recovery_period: float = _setting(
        "WEBHOOKS_RECOVERY_PERIOD", "1m", parse_duration, "interval of the stale-claim sweep"
    )
    retention_period: float = _setting(
        "WEBHOOKS_RETENTION_PERIOD", "1h", parse_duration, "retention job interval (0 disables)"
    )
    retention_succeeded: float = _setting(
        "WEBHOOKS_RETENTION_SUCCEEDED", "30d", parse_duration,
        "age after which succeeded deliveries are deleted (0 disables)",
    )
    retention_failed: float = _setting(
        "WEBHOOKS_RETENTION_FAILED", "90d", parse_duration,
        "age after which failed and cancelled deliveries are deleted (0 disables)",
    )
    secret_rotation_grace: float = _setting(
        "WEBHOOKS_SECRET_ROTATION_GRACE", "24h", parse_duration,
        "how long a rotated-out secret keeps signing",
    )
    startup_timeout: float = _setting(
        "WEBHOOKS_STARTUP_TIMEOUT", "1m", parse_duration,
        "how long a starting worker waits for its database before exiting with code 3",
    )
    shutdown_timeout: float = _setting(
        "WEBHOOKS_SHUTDOWN_TIMEOUT", "25s", parse_duration, "in-flight grace on SIGTERM"
    )
    max_payload: int = _setting(
        "WEBHOOKS_MAX_PAYLOAD", "1MiB", parse_size, "largest accepted event payload"
    )
    event_types: CatalogMode = _setting(
        "WEBHOOKS_EVENT_TYPES", "open", member_of(CatalogMode),
        "open: any event type; strict: only the catalog's, at publish and in subscriptions",
    )
    create_tenants_on_publish: bool = _setting(
        "WEBHOOKS_CREATE_TENANTS_ON_PUBLISH", "false", parse_bool,
        "create a tenant on the first event published to its uid, instead of refusing it",
    )
    allow_private_endpoints: bool = _setting(
        "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS", "false", parse_bool,
        "allow loopback, private and link-local endpoints (true under dev)",
    )
    public_url: str | None = _setting(
        "WEBHOOKS_PUBLIC_URL", None, parse_origin_url,
        "the address clients reach the web process at, e.g. https://hooks.example.com: the base "
        "of the portal sessions' URLs and of the operational events' links (unset: the address "
        "each request came to; a path in the links)",
    )
    operational_tenant: str | None = _setting(
        "WEBHOOKS_OPERATIONAL_TENANT", None, parse_tenant_uid,
        "the uid of the tenant that hears operational events about the other tenants' "
        "endpoints (disabled, circuit opened, recovered, deliveries exhausted, keys blocked); "
        "a worker refuses to start when no tenant has it (unset: none are published)",
    )
    portal_frame_ancestors: str = _setting(
        "WEBHOOKS_PORTAL_FRAME_ANCESTORS", "'self'", parse_csp_sources,
        "the pages that may embed /portal in a frame: CSP sources separated by spaces, e.g. "
        "'self' https://app.example.com",
    )
    db_pool_size: int = _setting(
        "WEBHOOKS_DB_POOL_SIZE", "10", int_between(1, 1000), "database connections per process"
    )
    metrics_port: int = _setting(
        "WEBHOOKS_METRICS_PORT", "9464", int_between(0, 65535),
        "port of the worker's /metrics and /healthz (0 disables)",
    )
    queue_metrics_period: float = _setting(
        "WEBHOOKS_QUEUE_METRICS_PERIOD", "15s", parse_duration,
        "interval at which the worker refreshes its queue gauges (depth per status, oldest "
        "due age)",
    )
    log_level: str = _setting(
        "WEBHOOKS_LOG_LEVEL", "info", one_of("debug", "info", "warning", "error"), "log level"
    )
    audit_log: str | None = _setting(
        "WEBHOOKS_AUDIT_LOG", None, parse_text,
        "file the commands append their audit lines to (unset: "
        "$XDG_STATE_HOME/webhooks/audit.log, by default ~/.local/state/webhooks/audit.log; "
        "'-': standard error)",
    )
    web_concurrency: int = _setting(
        "WEB_CONCURRENCY", "1", int_between(1, 64),
        "gunicorn worker processes of `webhooks web` (each keeps its own metrics: scale the "
        "web tier by instances, each scraped on its own)",
    )
    otlp_endpoint: str | None = _setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT", None, parse_text,
        "OTLP/HTTP collector for metrics and traces",
    )
    kafka_bootstrap_servers: str | None = _setting(
        "KAFKA_BOOTSTRAP_SERVERS", None, parse_text, "Kafka brokers (unset: no consumer)"
    )
    kafka_topics: tuple[str, ...] = _setting(
        "KAFKA_TOPICS", "webhooks", parse_csv, "comma-separated topics to consume"
    )
    kafka_group_id: str = _setting("KAFKA_GROUP_ID", "webhooks", parse_text, "consumer group")
    kafka_batch_size: int = _setting(
        "WEBHOOKS_KAFKA_BATCH_SIZE", "500", int_between(1, 100_000),
        "most broker messages read and stored in one transaction",
    )
    kafka_session_timeout: float = _setting(
        "WEBHOOKS_KAFKA_SESSION_TIMEOUT", "6s", parse_duration,
        "consumer-group session: a silent worker's partitions move to others after it",
    )

    @classmethod
    def load(
        cls,
        environ: Mapping[str, str] | None = None,
        flags: Mapping[str, Any] | None = None,
        *,
        dev: bool = False,
    ) -> Settings:
        """Build the settings from flags, then `environ`, then defaults; raise SettingsError."""
        environ = os.environ if environ is None else environ
        flags = flags or {}
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(cls):
            meta = spec.metadata
            raw = flags.get(spec.name)
            source = f"--{flag_name(meta['env'])}"
            if raw is None:
                raw, source = environ.get(meta["env"]), meta["env"]
            if raw is None:
                continue
            try:
                values[spec.name] = meta["parse"](str(raw))
            except ValueError as error:
                raise SettingsError(f"{source}: {error}") from None
        if dev:
            values.setdefault("allow_private_endpoints", True)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise SettingsError when values contradict each other."""
        if self.min_backoff <= 0:
            raise SettingsError("WEBHOOKS_MIN_BACKOFF: must be greater than 0")
        if self.max_backoff < self.min_backoff:
            raise SettingsError(
                "WEBHOOKS_MAX_BACKOFF: must not be shorter than WEBHOOKS_MIN_BACKOFF "
                f"({format_duration(self.max_backoff)} < {format_duration(self.min_backoff)})"
            )
        for name in ("retry_period", "http_timeout", "claim_timeout", "retry_window",
                     "recovery_period", "queue_metrics_period", "endpoint_ramp",
                     "circuit_window", "circuit_probe_interval"):
            if getattr(self, name) <= 0:
                env = type(self).__dataclass_fields__[name].metadata["env"]
                raise SettingsError(f"{env}: must be greater than 0")
        if self.claim_timeout <= shortest_claim_timeout(self.http_timeout):
            raise SettingsError(
                "WEBHOOKS_CLAIM_TIMEOUT: must be longer than "
                f"{format_duration(shortest_claim_timeout(self.http_timeout))} ({HOLD} times "
                f"WEBHOOKS_HTTP_TIMEOUT and {format_duration(RECORD_MARGIN)}): a claim may wait "
                f"behind {HOLD - 1} rounds of its config's sends, then send and be recorded, "
                "before it may be recovered as stale"
            )
        if self.circuit_max_probe_interval < self.circuit_probe_interval:
            raise SettingsError("WEBHOOKS_CIRCUIT_MAX_PROBE_INTERVAL: must not be shorter than "
                                "WEBHOOKS_CIRCUIT_PROBE_INTERVAL")
        if self.max_payload <= 0:
            raise SettingsError("WEBHOOKS_MAX_PAYLOAD: must be greater than 0")
        if self.kafka_bootstrap_servers and not self.kafka_topics:
            raise SettingsError("KAFKA_TOPICS: name at least one topic to consume")
        for topic in self.kafka_topics:
            if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", topic):
                raise SettingsError(f"KAFKA_TOPICS: {topic!r} is not a Kafka topic name "
                                    "(letters, digits, '.', '_', '-'; at most 249)")
        if self.kafka_session_timeout < 1:
            raise SettingsError("WEBHOOKS_KAFKA_SESSION_TIMEOUT: must be at least 1s")

    @property
    def endpoint_cap(self) -> int:
        """Return how many requests of one config a worker sends at once, by default."""
        return self.endpoint_concurrency or max(1, (self.dispatch_concurrency + 1) // 2)

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with `changes` applied and validated."""
        settings = dataclasses.replace(self, **changes)
        settings.validate()
        return settings

    @property
    def session_database_url(self) -> str | None:
        """Return the URL for what needs a server session of its own: the direct URL if set,
        else DATABASE_URL (whose connections then say whether a pooler stands between)."""
        return self.database_direct_url or self.database_url

    @property
    def session_pooler(self) -> Pooler:
        """Return what stands before `session_database_url`: a direct URL is found out like
        any other; DATABASE_URL is what WEBHOOKS_DATABASE_POOLER says."""
        return Pooler.AUTO if self.database_direct_url else self.database_pooler

    def connection_pool(self, *, size: int, application_name: str) -> ConnectionPool:
        """Return a pool of `size` connections to DATABASE_URL, through what is in between."""
        return ConnectionPool(self.require_database_url(), size=size,
                              application_name=application_name, pooler=self.database_pooler)

    def require_database_url(self) -> str:
        """Return DATABASE_URL or raise SettingsError naming it."""
        if not self.database_url:
            raise SettingsError("DATABASE_URL: required (e.g. postgresql://user@host/db)")
        return self.database_url


def flag_name(env: str) -> str:
    """Return the CLI flag of an environment variable (`WEBHOOKS_MIN_BACKOFF` -> `min-backoff`)."""
    return env.removeprefix("WEBHOOKS_").lower().replace("_", "-")

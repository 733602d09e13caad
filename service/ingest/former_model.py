"""`webhooks backfill-deliveries`: convert the former `attempts` table into deliveries.

Per former webhook and config, the latest attempt decides: outstanding retries (`to retry`,
`retrying`) become pending deliveries due at their `next_retry_after` (cancelled if the
config is inactive) that continue the former attempts' numbering and count, with a fresh
retry window; recent `success`/`failed` history becomes
terminal deliveries; each keeps its attempts. Resumable and idempotent: progress is saved
with every batch, and an existing (event, config) pair is never converted twice.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from db import backfill
from db.backfill import ConvertedAttempt, ConvertedDelivery, FormerAttempt
from db.events import NewEvent, encode_payload
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from db.vocabulary import Status
from service.policy.classify import answer_outcome

# The statuses of the former model
OUTSTANDING = ("to retry", "retrying")
FORMER_SUCCESS, FORMER_FAILED = "success", "failed"
UNKNOWN_TYPE = "unknown"

Report = Callable[[int, int, Counter], None]


def run(pool: ConnectionPool, *, keep_succeeded: float, keep_failed: float,
        batch_size: int = 500, report: Report = lambda done, total, counts: None) -> Counter:
    """Convert every former webhook not yet converted; return the running counts."""
    progress = backfill.start(pool)
    counts = Counter(progress.counts)
    after = progress.last_key
    total = backfill.remaining(pool, after)
    done = 0
    report(done, total, counts)
    while rows := backfill.batch(pool, after, batch_size):
        states = backfill.config_states(pool, {r.config_id for r in rows if r.config_id})
        events, deliveries = convert(rows, states, now=datetime.now(UTC),
                                     keep_succeeded=keep_succeeded, keep_failed=keep_failed,
                                     counts=counts)
        after = rows[-1].webhook_id
        created, attempts = backfill.write(pool, events, deliveries, last_key=after,
                                           counts=dict(counts), done=False)
        counts["already converted"] += len(deliveries) - created
        counts["attempts"] += attempts
        done += len({r.webhook_id for r in rows})
        report(done, total, counts)
    backfill.write(pool, [], [], last_key=after, counts=dict(counts), done=True)
    return counts


def convert(rows: Iterable[FormerAttempt], active: dict[str, bool], *, now: datetime,
            keep_succeeded: float, keep_failed: float,
            counts: Counter) -> tuple[list[NewEvent], list[ConvertedDelivery]]:
    """Return the events and deliveries for former attempts grouped by webhook and config."""
    events: dict[str, NewEvent] = {}
    deliveries: list[ConvertedDelivery] = []
    for (webhook_id, config_id), group in itertools.groupby(
            rows, key=lambda r: (r.webhook_id, r.config_id)):
        history = tuple(group)
        first, latest = history[0], history[-1]
        if config_id is None or config_id not in active:
            counts["skipped: config gone"] += 1
            continue
        status, due, error = _target(latest, active[config_id], now=now,
                                     keep_succeeded=keep_succeeded, keep_failed=keep_failed)
        if status is None:
            counts[f"skipped: {error}"] += 1
            continue
        payload = next((r.payload for r in reversed(history) if r.payload is not None), None)
        event_type, data = event_fields(payload)
        events.setdefault(webhook_id, NewEvent(webhook_id, event_type, encode_payload(data),
                                               DEFAULT_TENANT_ID, _utc(first.created_at)))
        deliveries.append(ConvertedDelivery(
            event_id=webhook_id, config_id=config_id, event_type=event_type, status=status,
            # The former attempts are this generation's first ones: an outstanding retry
            # continues with attempt n + 1 (`webhook-attempt`), they count toward
            # WEBHOOKS_MAX_ATTEMPTS, and its retry window starts at the first new attempt.
            attempt_count=len(history),
            next_attempt_at=due, last_status_code=latest.status_code, last_error=error,
            created_at=_utc(first.created_at), updated_at=_utc(latest.updated_at),
            attempts=converted_attempts(history),
        ))
        counts[status] += 1
    return list(events.values()), deliveries


def event_fields(payload: str | None) -> tuple[str, object]:
    """Return the event type and data of a former payload (the broker message it carried)."""
    try:
        message = json.loads(payload) if payload is not None else None
    except ValueError:
        return UNKNOWN_TYPE, payload
    if not isinstance(message, dict):
        return UNKNOWN_TYPE, message
    event_type = message.get("type")
    if not isinstance(event_type, str) or not event_type:
        return UNKNOWN_TYPE, message
    for key in ("payload", "data"):
        if key in message:
            return event_type, message[key]
    return event_type, message


def converted_attempts(history: Iterable[FormerAttempt]) -> tuple[ConvertedAttempt, ...]:
    """Return the attempts a converted delivery keeps of its former attempts, numbered."""
    return tuple(ConvertedAttempt(number, row.endpoint or "unknown",
                                  answer_outcome(row.status_code or 0), row.status_code or 0,
                                  _utc(row.created_at))
                 for number, row in enumerate(history, start=1))


def _target(latest: FormerAttempt, active: bool, *, now: datetime, keep_succeeded: float,
            keep_failed: float) -> tuple[Status | None, datetime | None, str | None]:
    """Return (status, due, last error) of the converted delivery, or (None, None, why)."""
    age = now - _utc(latest.updated_at)
    if latest.status in OUTSTANDING:
        if not active:
            return Status.CANCELLED, None, "config inactive at upgrade"
        return Status.PENDING, _utc(latest.next_retry_after) if latest.next_retry_after else now, \
            _http_error(latest.status_code)
    if latest.status == FORMER_SUCCESS:
        if keep_succeeded and age > timedelta(seconds=keep_succeeded):
            return None, None, "older than retention"
        return Status.SUCCEEDED, None, None
    if latest.status == FORMER_FAILED:
        if keep_failed and age > timedelta(seconds=keep_failed):
            return None, None, "older than retention"
        return Status.FAILED, None, _http_error(latest.status_code) or "failed in the former model"
    return None, None, f"unknown status {latest.status!r}"


def _http_error(code: int | None) -> str | None:
    if code and 200 <= code < 300:
        return None
    return f"HTTP {code}" if code else "network error"


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

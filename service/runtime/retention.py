"""The worker's retention job: delete old terminal deliveries on a schedule (docs/operations.md)."""

from __future__ import annotations

import logging

from db import retention
from db.pool import ConnectionPool
from db.vocabulary import Status
from service.runtime.telemetry import Telemetry
from service.runtime.throttle import DutyCycle

log = logging.getLogger("webhooks.retention")
# After each batch, retention rests 1.5 times as long as the batch took: it never takes more than
# 40 % of a database connection's time from dispatch and ingest (measured: bench/RESULTS.md,
# history).
RETENTION_REST = 1.5


def apply_retention(pool: ConnectionPool, settings, telemetry: Telemetry, *,
                    session_pool: ConnectionPool | None = None) -> retention.Deleted:
    """Run one retention pass with the ages of `settings`; log and count what went.

    `session_pool` reaches the database directly (WEBHOOKS_DATABASE_DIRECT_URL) for the
    retention lock when `pool` goes through a transaction-mode pooler."""
    deleted = retention.run(
        pool,
        succeeded_age=settings.retention_succeeded,
        finished_age=settings.retention_failed,
        pause=DutyCycle(RETENTION_REST),
        session_pool=session_pool,
    )
    if deleted.skipped:
        log.info("retention skipped: another worker is running it")
        return deleted
    telemetry.deleted(Status.SUCCEEDED, deleted.succeeded)
    telemetry.deleted("failed_or_cancelled", deleted.finished)
    telemetry.deleted("events", deleted.events)
    telemetry.deleted("rejected_events", deleted.rejected_events)
    if deleted.succeeded or deleted.finished or deleted.events or deleted.rejected_events:
        log.info("retention pass", extra={
            "deleted_succeeded": deleted.succeeded, "deleted_failed_or_cancelled":
            deleted.finished, "deleted_events": deleted.events,
            "deleted_replay_requests": deleted.replay_requests,
            "deleted_rejected_events": deleted.rejected_events,
            "deleted_attempt_counts": deleted.attempt_counts,
        })
    return deleted

"""Return stale claims (workers that died mid-flight) to the queue, in bounded batches."""

from __future__ import annotations

import logging
from collections import Counter

from db import deliveries
from db.pool import ConnectionPool
from service.telemetry import Telemetry

log = logging.getLogger("webhooks.recovery")

RECOVERY_BATCH = 1000  # most claims recovered by one statement


def recover_stale_claims(pool: ConnectionPool, *, timeout: float, telemetry: Telemetry) -> int:
    """Recover every claim older than `timeout` seconds; return how many."""
    total = Counter()
    while True:
        moved = deliveries.recover_stale(pool, timeout=timeout, limit=RECOVERY_BATCH)
        total.update(m.status for m in moved)
        if len(moved) < RECOVERY_BATCH:
            break
    count = sum(total.values())
    if count:
        telemetry.recovered(count)
        for status, n in total.items():
            telemetry.transition("delivering", status, n)
        log.warning("recovered stale claims", extra={"recovered": count, **dict(total)})
    return count

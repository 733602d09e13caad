"""The words every layer shares: the statuses of a delivery, the prefixes of secrets and tokens.

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


REPLAYABLE = (Status.FAILED, Status.PENDING)  # what a replay changes (failed: a new generation)
IN_HAND = (Status.PENDING, Status.DELIVERING)  # the work queue, not yet finished

SECRET_PREFIX = "whsec_"  # a config's signing secret (Standard Webhooks): whsec_<base64 key>
TOKEN_PREFIX = "whk_"  # an API bearer token

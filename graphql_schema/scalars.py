"""Scalars whose errors speak to the client: a bad date says what a good one looks like."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

RFC_3339_HINT = "give an RFC 3339 time with an offset, e.g. 2024-05-01T12:00:00Z"


def parse_datetime(value: Any) -> datetime:
    """Return the instant an ISO 8601 string names; raise ValueError with a hint otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{RFC_3339_HINT} (as a string)")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(RFC_3339_HINT) from None


DateTime = strawberry.scalar(
    name="DateTime", description="Date with time (isoformat)",
    serialize=datetime.isoformat, parse_value=parse_datetime,
)

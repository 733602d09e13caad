"""Check the arguments resolvers pass on to `db/`: ids, free text and instants."""

from __future__ import annotations

from datetime import datetime

from db.errors import InvalidInput
from graphql_schema.scalars import RFC_3339_HINT

MAX_ID = 2**63 - 1  # deliveries.id is a bigint
MAX_TEXT_LENGTH = 2048
MAX_GRACE_SECONDS = 30 * 24 * 3600  # longest grace a secret rotation may be given (30 days)


def delivery_id(id: str) -> int:
    """Return the delivery id that `id` names; raise InvalidInput when it cannot name one."""
    text = str(id).strip()
    if not text.isascii() or not text.isdigit():
        raise InvalidInput(f"id: {shown(id)} is not a delivery id (a positive integer)")
    number = int(text) if len(text) <= 19 else MAX_ID + 1
    if not 0 < number <= MAX_ID:
        raise InvalidInput(f"id: {shown(id)} is out of range (1 to {MAX_ID})")
    return number


def shown(value: object) -> str:
    """Return a value as error messages show it: quoted, and cut short when long."""
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "…")


def text(value: str | None, field: str) -> str | None:
    """Return `value` (None stays None) if the database can store it, else raise InvalidInput."""
    if value is None:
        return None
    if "\x00" in value:
        raise InvalidInput(f"{field}: must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field}: must be valid Unicode (no lone surrogates)") from None
    if len(value) > MAX_TEXT_LENGTH:
        raise InvalidInput(f"{field}: longer than {MAX_TEXT_LENGTH} characters")
    return value


def texts(values: list[str] | None, field: str) -> list[str] | None:
    """Check each of `values` as `text` does."""
    return None if values is None else [text(value, field) for value in values]


def grace_seconds(value: int | None) -> int | None:
    """Return a rotation grace in seconds (None stays None) if 0 to 30 days, else raise."""
    if value is not None and not 0 <= value <= MAX_GRACE_SECONDS:
        raise InvalidInput(f"graceSeconds: must be 0 to {MAX_GRACE_SECONDS} seconds (30 days), "
                           f"not {value}")
    return value


def instant(value: datetime | None, field: str) -> datetime | None:
    """Return `value` if it carries a UTC offset (RFC 3339), else raise InvalidInput."""
    if value is not None and value.tzinfo is None:
        raise InvalidInput(f"{field}: {RFC_3339_HINT}")
    return value

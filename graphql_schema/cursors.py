"""Opaque pagination cursors: base64url of a small JSON position, tagged with its listing
and with the scope (a tenant, or the platform) of the caller it was given to.

A cursor that was not made here (garbage, tampered, from another listing, or given to a
caller of another scope) is bad input, never a server error: a cursor does not carry over
from one tenant to another.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from db.errors import InvalidInput
from db.scope import Scope
from graphql_schema.arguments import MAX_ID

MAX_CURSOR_LENGTH = 1000


def encode(listing: str, scope: Scope, **position: Any) -> str:
    """Return the cursor of `position` in `listing`, for a caller of `scope`."""
    text = json.dumps({"l": listing, "t": scope.tenant_id, **position}, separators=(",", ":"),
                      default=str)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(listing: str, scope: Scope, cursor: str, argument: str = "after") -> dict[str, Any]:
    """Return the position a cursor of `listing` given to a caller of `scope` holds, or raise
    InvalidInput."""
    try:
        if len(cursor) > MAX_CURSOR_LENGTH:
            raise ValueError("too long")
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = json.loads(text)
        if not isinstance(position, dict) or position.pop("l", None) != listing:
            raise ValueError("not a cursor of this listing")
        if position.pop("t", None) != scope.tenant_id:
            raise ValueError("a cursor given to another tenant")
        return position
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _not_a_cursor(argument) from None


def id_after(listing: str, scope: Scope, cursor: str | None,
             argument: str = "after") -> int | None:
    """Return the id position of a cursor of `listing` (None when no cursor is given)."""
    if cursor is None:
        return None
    position = decode(listing, scope, cursor, argument).get("id")
    if type(position) is not int or not 0 < position <= MAX_ID:
        raise _not_a_cursor(argument)
    return position


def key_after(listing: str, scope: Scope, cursor: str | None,
              argument: str = "after") -> str | None:
    """Return the text key position of a cursor of `listing` (None when no cursor is given)."""
    if cursor is None:
        return None
    position = decode(listing, scope, cursor, argument).get("key")
    if not isinstance(position, str) or "\x00" in position:
        raise _not_a_cursor(argument)
    return position


def time_and_id_after(listing: str, scope: Scope, cursor: str | None,
                      argument: str = "after", *, key: str) -> tuple[datetime, int] | None:
    """Return the (time, id) position of a cursor of `listing`, its time under `key`, or None."""
    if cursor is None:
        return None
    id = id_after(listing, scope, cursor, argument)
    try:
        moment = datetime.fromisoformat(decode(listing, scope, cursor, argument)[key])
        if moment.tzinfo is None:
            raise ValueError("no offset")
    except (KeyError, TypeError, ValueError):
        raise _not_a_cursor(argument) from None
    return moment, id


def created_and_id_after(listing: str, scope: Scope, cursor: str | None,
                         argument: str = "after") -> tuple[datetime, str] | None:
    """Return the (created_at, id) position of a cursor of `listing`, or None without one."""
    if cursor is None:
        return None
    position = decode(listing, scope, cursor, argument)
    try:
        created = datetime.fromisoformat(position["createdAt"])
        id = position["id"]
        if created.tzinfo is None or not isinstance(id, str) or "\x00" in id:
            raise ValueError("malformed position")
    except (KeyError, TypeError, ValueError):
        raise _not_a_cursor(argument) from None
    return created, id


def _not_a_cursor(argument: str) -> InvalidInput:
    """Return the error of a cursor that `argument` cannot take, naming the one to pass."""
    returned = "startCursor" if argument == "before" else "endCursor"
    return InvalidInput(f"{argument}: not a cursor of this listing; pass a {returned} it "
                        "returned as is")

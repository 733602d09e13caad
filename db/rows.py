"""Turn cursor rows into dictionaries keyed by column name."""

from __future__ import annotations

from typing import Any


def as_dicts(cursor: Any) -> list[dict[str, Any]]:
    """Return the remaining rows of `cursor` as dictionaries."""
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def as_dict(cursor: Any) -> dict[str, Any] | None:
    """Return the next row of `cursor` as a dictionary, or None."""
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([column.name for column in cursor.description], row, strict=True))

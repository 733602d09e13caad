"""Turn cursor rows into dictionaries keyed by column name, and those into typed rows."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


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


def as_type(cls: type[T], row: Mapping[str, Any], **given: Any) -> T:
    """Build the dataclass `cls` from the columns of `row` named as its fields, and `given`.

    Columns no field is named after (a statement's bookkeeping, such as the count that makes
    it send a wake-up) are left out; a field with neither a column nor a default raises.
    """
    columns = {name: row[name] for name in _field_names(cls) if name in row and name not in given}
    return cls(**columns, **given)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))

"""How two JSON values compare in a filter: equal, or ordered within one kind."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

EXCERPT = 60  # characters of a value quoted in an explanation


class Kind(StrEnum):
    """The kind of a JSON value; an order compares values of one kind only."""

    NULL = "null"
    BOOLEAN = "boolean"
    NUMBER = "number"
    STRING = "string"
    ARRAY = "array"
    OBJECT = "object"


def kind(value: Any) -> Kind:
    if value is None:
        return Kind.NULL
    if isinstance(value, bool):  # before numbers: True is an int to Python
        return Kind.BOOLEAN
    if isinstance(value, int | float):
        return Kind.NUMBER
    if isinstance(value, str):
        return Kind.STRING
    if isinstance(value, list):
        return Kind.ARRAY
    return Kind.OBJECT


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal: of one kind, numbers by value (1 and 1.0 alike),
    arrays element by element in order, objects field by field in any order."""
    kind_a = kind(a)
    if kind_a is not kind(b):
        return False
    if kind_a is Kind.ARRAY:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if kind_a is Kind.OBJECT:
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    return a == b


def ordered(a: Any, b: Any) -> int | None:
    """Return -1, 0 or 1 as `a` is below, equal to or above `b`, when both are numbers or both
    strings (by Unicode code points); None otherwise."""
    kind_a = kind(a)
    if kind_a is not kind(b) or kind_a not in (Kind.NUMBER, Kind.STRING):
        return None
    return (a > b) - (a < b)


def quoted(value: Any) -> str:
    """Return a value as compact JSON, shortened for an explanation."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= EXCERPT else text[:EXCERPT - 1] + "…"

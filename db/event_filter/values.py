"""How two JSON values compare in a filter: equal, or ordered within one kind."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
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


def quoted(value: Any) -> str:
    """Return a value as compact JSON, shortened for an explanation."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= EXCERPT else text[:EXCERPT - 1] + "…"


_NUMBERS = (int, float)  # by exact type: a boolean is not a number here


def equal_to(operand: Any) -> Callable[[Any], bool]:
    """Return the test of a value being `same` as `operand`, specialised to its kind."""
    operand_kind = kind(operand)
    if operand_kind is Kind.NUMBER:
        return lambda value: type(value) in _NUMBERS and value == operand
    if operand_kind is Kind.STRING:
        return lambda value: type(value) is str and value == operand
    if operand_kind in (Kind.BOOLEAN, Kind.NULL):
        return lambda value: value is operand
    return lambda value: same(value, operand)


_ORDERS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def order_test(name: str, operand: int | float | str) -> Callable[[Any], bool]:
    """Return the test of a value standing in order `name` ($gt $gte $lt $lte) to `operand`:
    numbers to a number, strings (by Unicode code points) to a string, nothing else."""
    holds = _ORDERS[name]
    if type(operand) is str:
        return lambda value: type(value) is str and holds(value, operand)
    return lambda value: type(value) in _NUMBERS and holds(value, operand)

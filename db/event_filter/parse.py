"""Read a filter as a caller gives it into conditions, or say precisely where it is wrong."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from db.event_filter import patterns
from db.event_filter.conditions import (
    AllOf,
    AnyOf,
    Compares,
    Condition,
    Equals,
    Exists,
    Matches,
    Negated,
    OneOf,
    OnField,
    ValueTest,
)
from db.event_filter.operators import COMPARISONS, FIELD_OPERATORS, LOGICAL, Operator
from db.event_filter.paths import split
from db.json_types import described

MAX_DEPTH = 8  # filters nested in $and, $or and $not
MAX_VALUE_DEPTH = 32  # arrays and objects nested in an operand
_PLAIN_KEY = re.compile(r"[\w.$-]+")


class FilterError(ValueError):
    """Where a filter is wrong (`place`, e.g. `$and[1].amount.$gt`) and how."""

    def __init__(self, place: str, message: str):
        super().__init__(message)
        self.place = place
        self.message = message


def parse(given: Any) -> Condition:
    """Return the conditions of a filter; raise FilterError naming where it is wrong."""
    state = _State()
    return state.filter(given, "", 0)


class _State:
    def __init__(self) -> None:
        self.patterns = 0

    def filter(self, given: Any, place: str, depth: int) -> Condition:
        if not isinstance(given, dict):
            raise FilterError(place, "a filter is a JSON object of fields and $and/$or")
        if depth > MAX_DEPTH:
            raise FilterError(place, f"filters nest at most {MAX_DEPTH} deep")
        conditions: list[Condition] = []
        for key, value in given.items():
            at = _join(place, key)
            if key.startswith("$"):
                conditions.append(self.logical(key, value, at, depth))
                continue
            segments = split(key)
            if isinstance(segments, str):
                raise FilterError(at, segments)
            conditions.append(OnField(key, segments, self.tests(value, at, depth)))
        return conditions[0] if len(conditions) == 1 else AllOf(tuple(conditions))

    def logical(self, key: str, value: Any, at: str, depth: int) -> Condition:
        if key not in LOGICAL:
            if key in FIELD_OPERATORS:
                raise FilterError(at, f"{key} applies to a field: write "
                                      f'{{"field": {{"{key}": …}}}}')
            raise FilterError(at, _unknown(key, LOGICAL + FIELD_OPERATORS))
        if not isinstance(value, list) or not value:
            raise FilterError(at, f"{key} takes a non-empty array of filters")
        parts = tuple(self.filter(part, f"{at}[{index}]", depth + 1)
                      for index, part in enumerate(value))
        return AllOf(parts) if key == Operator.AND else AnyOf(parts)

    def tests(self, value: Any, at: str, depth: int) -> tuple[ValueTest, ...]:
        """Return the tests of a field's value: its operators, or equality with it."""
        if not (isinstance(value, dict) and any(key.startswith("$") for key in value)):
            return (Equals(_value(value, at)),)
        plain = [key for key in value if not key.startswith("$")]
        if plain:
            raise FilterError(_join(at, plain[0]), "an object of operators holds operators "
                              "only (to match a whole object, use $eq)")
        if Operator.OPTIONS in value and Operator.REGEX not in value:
            raise FilterError(_join(at, Operator.OPTIONS), "$options goes with $regex")
        return tuple(self.test(key, operand, value, _join(at, key), depth)
                     for key, operand in value.items() if key != Operator.OPTIONS)

    def test(self, key: str, operand: Any, siblings: dict[str, Any], at: str,
             depth: int) -> ValueTest:
        if key in LOGICAL:
            raise FilterError(at, f"{key} combines filters: it stands at a filter's top "
                                  "level, not under a field")
        if key not in FIELD_OPERATORS:
            raise FilterError(at, _unknown(key, FIELD_OPERATORS))
        operator = Operator(key)
        if operator is Operator.EQ:
            return Equals(_value(operand, at))
        if operator is Operator.NE:
            return Negated(operator, (Equals(_value(operand, at)),), operand)
        if operator in COMPARISONS:
            if isinstance(operand, bool) or not isinstance(operand, int | float | str):
                raise FilterError(at, f"{key} takes a number or a string, not "
                                      f"{described(operand)}")
            return Compares(operator, _value(operand, at))
        if operator in (Operator.IN, Operator.NIN):
            if not isinstance(operand, list):
                raise FilterError(at, f"{key} takes an array of values, not {described(operand)}")
            one_of = OneOf([_value(item, f"{at}[{index}]")
                            for index, item in enumerate(operand)])
            return one_of if operator is Operator.IN else Negated(operator, (one_of,), operand)
        if operator is Operator.EXISTS:
            if not isinstance(operand, bool):
                raise FilterError(at, f"$exists takes true or false, not {described(operand)}")
            return Exists(operand)
        if operator is Operator.REGEX:
            return self.regex(operand, siblings.get(Operator.OPTIONS, ""), at)
        return self.negation(operand, at, depth)

    def regex(self, pattern: Any, options: Any, at: str) -> Matches:
        if not isinstance(pattern, str):
            raise FilterError(at, f"$regex takes a string, not {described(pattern)}")
        options_at = at.removesuffix(Operator.REGEX) + Operator.OPTIONS
        if not isinstance(options, str):
            raise FilterError(options_at, f"$options takes a string, not {described(options)}")
        wrong = patterns.options_error(options)
        if wrong:
            raise FilterError(options_at, wrong)
        self.patterns += 1
        if self.patterns > patterns.MAX_PATTERNS:
            raise FilterError(at, f"a filter has at most {patterns.MAX_PATTERNS} $regex")
        try:
            accepts = patterns.compile_pattern(pattern, options)
        except ValueError as error:
            raise FilterError(at, str(error)) from None
        return Matches(pattern, options, accepts)

    def negation(self, operand: Any, at: str, depth: int) -> Negated:
        if depth + 1 > MAX_DEPTH:
            raise FilterError(at, f"filters nest at most {MAX_DEPTH} deep")
        if not isinstance(operand, dict) or not operand or not all(
                key.startswith("$") for key in operand):
            raise FilterError(at, "$not takes an object of operators, e.g. "
                                  '{"$not": {"$gt": 5}}')
        return Negated(Operator.NOT, self.tests(operand, at, depth + 1), operand)


def _value(value: Any, at: str, depth: int = 0) -> Any:
    """Return an operand that is plain JSON (finite numbers, nested at most MAX_VALUE_DEPTH)."""
    if depth > MAX_VALUE_DEPTH:
        raise FilterError(at, f"a value nests at most {MAX_VALUE_DEPTH} arrays and objects")
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(at, "a number is finite")
    if isinstance(value, list):
        for item in value:
            _value(item, at, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _value(item, at, depth + 1)
    elif not (value is None or isinstance(value, bool | int | float | str)):
        raise FilterError(at, f"not a JSON value: {type(value).__name__}")
    return value


def _join(place: str, key: str) -> str:
    """Return the place of `key` inside `place`: dotted, or a quoted key in brackets when it
    is empty or holds characters beyond letters, digits, `_`, `-`, `.` and `$`."""
    if not _PLAIN_KEY.fullmatch(key):
        return f"{place}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{place}.{key}" if place else key


def _unknown(key: str, known: tuple[Operator, ...]) -> str:
    listed = ", ".join(op if op != Operator.REGEX else "$regex (with $options)"
                       for op in known if op != Operator.OPTIONS)
    return f"unknown operator {key}; the operators here are {listed}"

"""A checked filter as a tree of conditions: each says whether a document satisfies it
(`holds`) and, for an explanation, why (`explain`). `explain` decides by calling `holds`, so
the two never disagree.

The fan-out asks every filtered config's filter about every event it would receive, so
`holds` is written for speed: each test is specialised to its operand's kind when the filter
is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from db.event_filter.operators import Operator
from db.event_filter.paths import any_candidate, reach
from db.event_filter.values import equal_to, order_test, quoted

SHOWN_VALUES = 3  # reached values quoted in an explanation


class ValueTest:
    """A test of the values one path reaches (an operator and its operand)."""

    operator: Operator
    operand: Any

    def holds(self, reached: Sequence[Any]) -> bool:
        raise NotImplementedError

    def shown(self) -> str:
        return f'{{"{self.operator}": {quoted(self.operand)}}}'


@dataclass(frozen=True)
class Equals(ValueTest):
    """A value or an element equals the operand; null also matches nothing at the path."""

    operand: Any
    operator: Operator = Operator.EQ
    accepts: Callable[[Any], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accepts", equal_to(self.operand))

    def holds(self, reached: Sequence[Any]) -> bool:
        if self.operand is None and not reached:
            return True  # null matches a missing field, as in MongoDB
        return any_candidate(reached, self.accepts)


@dataclass(frozen=True)
class Compares(ValueTest):
    operator: Operator  # $gt $gte $lt $lte
    operand: Any
    accepts: Callable[[Any], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accepts", order_test(self.operator, self.operand))

    def holds(self, reached: Sequence[Any]) -> bool:
        return any_candidate(reached, self.accepts)


@dataclass(frozen=True)
class OneOf(ValueTest):
    operand: list[Any]
    operator: Operator = Operator.IN
    each: tuple[Equals, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "each", tuple(Equals(value) for value in self.operand))

    def holds(self, reached: Sequence[Any]) -> bool:
        return any(equals.holds(reached) for equals in self.each)


@dataclass(frozen=True)
class Exists(ValueTest):
    operand: bool
    operator: Operator = Operator.EXISTS

    def holds(self, reached: Sequence[Any]) -> bool:
        return bool(reached) == self.operand


@dataclass(frozen=True)
class Matches(ValueTest):
    operand: str  # the pattern as given
    options: str
    accepts: Callable[[Any], bool]  # a string the pattern finds a match in
    operator: Operator = Operator.REGEX

    def holds(self, reached: Sequence[Any]) -> bool:
        return any_candidate(reached, self.accepts)

    def shown(self) -> str:
        options = f', "$options": {quoted(self.options)}' if self.options else ""
        return f'{{"$regex": {quoted(self.operand)}{options}}}'


@dataclass(frozen=True)
class Negated(ValueTest):
    """`$ne`, `$nin` (the negation of `$eq`, `$in`) and `$not` (of all its tests)."""

    operator: Operator  # $ne $nin $not
    tests: tuple[ValueTest, ...]
    operand: Any = None  # as given

    def holds(self, reached: Sequence[Any]) -> bool:
        return any(not test.holds(reached) for test in self.tests)


class Condition:
    """A part of a filter over a whole document."""

    def holds(self, document: Any) -> bool:
        raise NotImplementedError

    def explain(self, document: Any) -> tuple[bool, str]:
        raise NotImplementedError


@dataclass(frozen=True)
class OnField(Condition):
    """The tests of one path, every one of them holding (each on its own: on an array, two
    tests may hold for different elements)."""

    path: str
    segments: tuple[str, ...]
    tests: tuple[ValueTest, ...]

    def holds(self, document: Any) -> bool:
        reached = reach(document, self.segments)
        return all(test.holds(reached) for test in self.tests)

    def explain(self, document: Any) -> tuple[bool, str]:
        reached = reach(document, self.segments)
        verdicts = [(test, test.holds(reached)) for test in self.tests]
        held = all(holds for _, holds in verdicts)
        shown = [test for test, holds in verdicts if holds == held]
        return held, (f"{self.path} is {_found(reached)}, which "
                      f"{'satisfies' if held else 'fails'} "
                      + " and ".join(test.shown() for test in shown))


@dataclass(frozen=True)
class AllOf(Condition):
    """Every condition holds (`$and`, and the fields of one object); none: always."""

    conditions: tuple[Condition, ...]

    def holds(self, document: Any) -> bool:
        return all(condition.holds(document) for condition in self.conditions)

    def explain(self, document: Any) -> tuple[bool, str]:
        if not self.conditions:
            return True, "an empty filter matches every event"
        verdicts = [condition.explain(document) for condition in self.conditions]
        held = all(holds for holds, _ in verdicts)
        reasons = [reason for holds, reason in verdicts if holds == held]
        return held, "; ".join(reasons)


@dataclass(frozen=True)
class AnyOf(Condition):
    """At least one condition holds (`$or`)."""

    conditions: tuple[Condition, ...]

    def holds(self, document: Any) -> bool:
        return any(condition.holds(document) for condition in self.conditions)

    def explain(self, document: Any) -> tuple[bool, str]:
        verdicts = [condition.explain(document) for condition in self.conditions]
        for holds, reason in verdicts:
            if holds:
                return True, f"$or: ({reason})"
        return False, "$or: no branch holds: " + "; ".join(f"({reason})"
                                                           for _, reason in verdicts)


def _found(reached: Sequence[Any]) -> str:
    if not reached:
        return "missing"
    if len(reached) == 1:
        return quoted(reached[0])
    shown = ", ".join(quoted(value) for value in reached[:SHOWN_VALUES])
    more = f" and {len(reached) - SHOWN_VALUES} more" if len(reached) > SHOWN_VALUES else ""
    return f"{shown}{more} (through arrays)"

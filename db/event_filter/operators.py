"""The operators of the filter language (MongoDB's names)."""

from __future__ import annotations

from enum import StrEnum


class Operator(StrEnum):
    AND = "$and"  # every filter of a list
    OR = "$or"  # at least one filter of a list
    EQ = "$eq"
    NE = "$ne"
    GT = "$gt"
    GTE = "$gte"
    LT = "$lt"
    LTE = "$lte"
    IN = "$in"
    NIN = "$nin"
    EXISTS = "$exists"
    REGEX = "$regex"
    OPTIONS = "$options"  # beside $regex only
    NOT = "$not"


LOGICAL = (Operator.AND, Operator.OR)  # on filters: at a filter's top level
COMPARISONS = (Operator.GT, Operator.GTE, Operator.LT, Operator.LTE)
FIELD_OPERATORS = tuple(op for op in Operator if op not in LOGICAL)  # on a field's values

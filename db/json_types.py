"""The names of JSON's types, as error messages say them."""

from __future__ import annotations

from typing import Any


def described(value: Any) -> str:
    """Name the JSON type of a parsed value, with its article."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"

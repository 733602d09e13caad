"""Where a dotted path leads in a JSON document: every value it reaches, through arrays."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

MAX_SEGMENTS = 32  # segments of one path
MAX_PATH_LENGTH = 256  # characters of one path


def split(path: str) -> tuple[str, ...] | str:
    """Return the segments of a dotted path, or why it is not one (a message)."""
    if not path:
        return "a field path is not empty"
    if len(path) > MAX_PATH_LENGTH:
        return f"a field path has at most {MAX_PATH_LENGTH} characters"
    segments = tuple(path.split("."))
    if len(segments) > MAX_SEGMENTS:
        return f"a field path has at most {MAX_SEGMENTS} segments"
    if any(not segment for segment in segments):
        return "a field path has no empty segment (no leading, trailing or double dot)"
    if any(segment.startswith("$") for segment in segments):
        return "a field path's segment does not start with $ (an operator stands in a value)"
    return segments


def reach(document: Any, segments: Sequence[str]) -> list[Any]:
    """Return the values `segments` reach in `document`, in document order.

    An object's segment is its field. An array's segment that is a decimal index (`0`, `12`)
    is that element; any other segment applies to each of its elements that is an object
    (elements that are arrays or scalars reach nothing). A scalar reaches nothing further.
    """
    value = document
    for at, segment in enumerate(segments):  # objects only: the common case, quickly
        if type(value) is dict:
            if segment not in value:
                return []
            value = value[segment]
        elif type(value) is list:
            reached: list[Any] = []
            _walk(value, segments, at, reached)
            return reached
        else:
            return []
    return [value]


def _walk(value: Any, segments: Sequence[str], at: int, reached: list[Any]) -> None:
    if at == len(segments):
        reached.append(value)
        return
    segment = segments[at]
    if isinstance(value, dict):
        if segment in value:
            _walk(value[segment], segments, at + 1, reached)
    elif isinstance(value, list):
        if segment.isdecimal() and segment.isascii():
            index = int(segment)
            if index < len(value):
                _walk(value[index], segments, at + 1, reached)
            return
        for element in value:
            if isinstance(element, dict):
                _walk(element, segments, at, reached)


def any_candidate(reached: Sequence[Any], accepts: Callable[[Any], bool]) -> bool:
    """Return whether `accepts` holds for what a value test looks at: a reached value or, for
    a reached array, one of its elements (one level: an array inside it is looked at whole)."""
    for value in reached:
        if accepts(value):
            return True
        if type(value) is list:
            for element in value:
                if accepts(element):
                    return True
    return False

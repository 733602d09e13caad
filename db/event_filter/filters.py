"""A checked filter, kept with its JSON text: what a config stores and the fan-out runs."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from db.errors import InvalidInput
from db.event_filter.conditions import Condition
from db.event_filter.parse import FilterError, parse

MAX_FILTER_BYTES = 8 * 1024  # of a filter's compact JSON text
COMPILED_KEPT = 4096  # filters kept parsed, by text (each a few kilobytes at most)
FIELD = "filter"  # the input field a filter is given in, named by its errors


@dataclass(frozen=True)
class Verdict:
    matched: bool
    reason: str


@dataclass(frozen=True)
class Filter:
    text: str  # compact JSON, its fields in the order given
    condition: Condition

    def matches(self, payload: Any) -> bool:
        """Whether an event with `payload` passes the filter."""
        return self.condition.holds(payload)

    def explain(self, payload: Any) -> Verdict:
        """Whether an event with `payload` passes the filter, and why."""
        return Verdict(*self.condition.explain(payload))


def check(given: Any) -> Filter:
    """Return the filter a caller gave, checked; raise InvalidInput naming the place in it that
    is wrong (`filter.$and[1].amount.$gt: ...`)."""
    try:
        text = json.dumps(given, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"{FIELD}: not representable as JSON ({error})") from None
    except RecursionError:
        raise InvalidInput(f"{FIELD}: nested too deeply") from None
    size = len(text.encode("utf-8"))
    if size > MAX_FILTER_BYTES:
        raise InvalidInput(f"{FIELD}: {size} bytes is over the limit of {MAX_FILTER_BYTES} "
                           "bytes")
    try:
        return Filter(text, parse(given))
    except FilterError as error:
        place = FIELD + ("" if error.place.startswith("[") or not error.place else ".")
        place += error.place
        raise InvalidInput(f"{place}: {error.message}") from None


@functools.lru_cache(maxsize=COMPILED_KEPT)
def compiled(text: str) -> Filter:
    """Return the filter a config stores (its JSON text, checked when it was stored), parsed
    once per text."""
    return Filter(text, parse(json.loads(text)))

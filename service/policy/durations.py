"""Parse and format human durations (`250ms`, `3s`, `1m`, `10h`, `30d`) and sizes (`1MiB`)."""

from __future__ import annotations

import math
import re
from decimal import Decimal

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_SIZE = re.compile(r"(\d+)\s*([a-z]*)")


def parse_duration(text: str) -> float:
    """Return the number of seconds in `text`; a bare number is seconds.

    Compound values such as `1h30m` are accepted. Raises ValueError on anything else.
    """
    value = text.strip().lower()
    if not value:
        raise ValueError("empty duration")
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if seconds < 0 or seconds != seconds or seconds == float("inf"):
            raise ValueError(f"invalid duration {text!r}")
        return seconds
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(value):
        raise ValueError(
            f"invalid duration {text!r}: use a number with a unit, e.g. 250ms, 3s, 1m, 10h, 30d"
        )
    return total


def format_duration(seconds: float, *, parts: int | None = None) -> str:
    """Return `seconds` as parse_duration reads it, largest unit first: `10h`, `1h30m30s`,
    `1d2h`; `250ms` below a second, `1.5s` between whole seconds.

    With `parts`, round to whole seconds and keep only the `parts` largest units, an
    approximate spelling for people: `1h2m` for 3725 seconds.
    """
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"not a duration: {seconds!r}")
    if parts is not None:
        seconds = round(seconds)
    if seconds != int(seconds):
        milliseconds = round(seconds * 1000)
        if seconds < 1 and milliseconds * _DURATION_UNITS["ms"] == seconds:  # reads back exactly
            return f"{milliseconds}ms"
        return f"{Decimal(repr(seconds)):f}s"  # every digit of the float, never an exponent
    whole, spelled = int(seconds), []
    for unit in ("d", "h", "m", "s"):
        count, whole = divmod(whole, int(_DURATION_UNITS[unit]))
        if count:
            spelled.append(f"{count}{unit}")
    return "".join(spelled[:parts]) or "0s"


def parse_size(text: str) -> int:
    """Return the number of bytes in `text` (`1048576`, `64KiB`, `1MiB`, `2MB`)."""
    match = _SIZE.fullmatch(text.strip().lower())
    if not match or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"invalid size {text!r}: use bytes or a unit, e.g. 64KiB, 1MiB, 1MB")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2)]

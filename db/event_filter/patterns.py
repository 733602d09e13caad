"""The regular expressions of `$regex`: RE2's syntax, matched in time linear in the text.

RE2 has no backtracking (so no backreferences or lookaround, the constructs that make a
pattern's cost explode); a pattern is at most MAX_PATTERN_LENGTH characters and its compiled
program at most MAX_PROGRAM_BYTES, so no filter holds a pattern that is slow or large to run.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

import re2
from re2 import _re2

MAX_PATTERN_LENGTH = 512  # characters of one pattern
MAX_PROGRAM_BYTES = 256 * 1024  # RE2's memory budget for one compiled pattern
MAX_PATTERNS = 16  # `$regex` operators in one filter
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED


class RegexOption(StrEnum):
    """The letters of `$options`, each a flag of the pattern."""

    IGNORE_CASE = "i"  # letters match either case (Unicode simple case folding)
    MULTILINE = "m"  # ^ and $ match at each line's start and end
    DOT_ALL = "s"  # . matches a newline too


def options_error(options: str) -> str | None:
    """Return why `options` are not `$options` letters, or None."""
    known = {option.value for option in RegexOption}
    unknown = sorted(set(options) - known)
    if unknown:
        return (f"unknown option {''.join(unknown)!r}: the options are "
                f"{', '.join(sorted(known))} (x, extended syntax, is not supported)")
    return None


def compile_pattern(pattern: str, options: str = "") -> Callable[[Any], bool]:
    """Return the test of a value being a string the pattern (with its `$options`) finds a
    match in; raise ValueError saying why the pattern cannot be one (too long, not RE2's
    syntax, too large compiled)."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"a pattern has at most {MAX_PATTERN_LENGTH} characters")
    settings = re2.Options()
    settings.max_mem = MAX_PROGRAM_BYTES
    settings.log_errors = False
    settings.never_capture = True  # a search needs no groups: cheaper
    flags = "".join(sorted(set(options)))
    try:
        compiled = re2.compile(f"(?{flags}){pattern}" if flags else pattern, settings)
    except re2.error as error:
        raise ValueError(_words(error)) from None
    # The module's own search converts offsets to characters and builds a match object (10
    # µs a call here); the engine's call itself answers in a quarter of that.
    engine = compiled._regexp.Match

    def accepts(value: Any) -> bool:
        if type(value) is not str:
            return False
        text = value.encode("utf-8", "surrogatepass")
        return engine(_UNANCHORED, text, 0, len(text))[0][0] >= 0

    return accepts


def _words(error: re2.error) -> str:
    text = error.args[0] if error.args else str(error)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "pattern too large" in text:
        return ("the pattern compiles too large (a repetition count multiplies it): at most "
                f"{MAX_PROGRAM_BYTES // 1024} KiB")
    return f"not a valid regular expression (RE2 syntax): {text}"

"""Classify an endpoint's response and read its Retry-After header."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

from db.vocabulary import AttemptOutcome  # constants only: the policy stays free of the database


class Classification(StrEnum):
    """What an answer's status means for its delivery."""

    SUCCEEDED = "succeeded"  # a 2xx
    RETRY = "retry"  # no answer, or a status worth trying again (408, 429, 5xx by default)
    FAIL = "fail"  # any other status: trying again would get the same answer


SUCCEEDED, RETRY, FAIL = Classification


def is_success(status_code: int) -> bool:
    """Return True for a 2xx status, the only answer that succeeds."""
    return 200 <= status_code <= 299


DEFAULT_RETRYABLE_TEXT = "408,429,5xx"  # status codes retried besides network errors
_CODE_ITEM = re.compile(r"([1-5])xx|([1-5][0-9]{2})", re.IGNORECASE)

_DELAY_SECONDS = re.compile(r"[0-9]+")
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DAY = r"(?:mon|tue|wed|thu|fri|sat|sun)"
_LONG_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = r"(?P<month>[a-z]{3})"
_TIME = r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
_HTTP_DATES = tuple(
    re.compile(pattern, re.IGNORECASE | re.ASCII)
    for pattern in (
        rf"{_DAY}, (?P<day>[0-9]{{2}}) {_MONTH} (?P<year>[0-9]{{4}}) {_TIME} GMT",
        rf"{_LONG_DAY}, (?P<day>[0-9]{{2}})-{_MONTH}-(?P<year>[0-9]{{2}}) {_TIME} GMT",
        rf"{_DAY} {_MONTH} (?P<day>[ 0-9][0-9]) {_TIME} (?P<year>[0-9]{{4}})",
    )
)


def parse_status_codes(text: str) -> frozenset[int]:
    """Return the codes a list such as `408,429,5xx` names; raise ValueError on a bad item.

    Items are codes (100-599) or classes (`4xx`); an empty list retries network errors only.
    A 2xx code cannot be listed: a success is never retried.
    """
    codes: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _CODE_ITEM.fullmatch(item)
        if not match:
            raise ValueError(f"{item!r} is not a status code (100-599) or a class such as 5xx")
        if match[1]:
            named = range(int(match[1]) * 100, int(match[1]) * 100 + 100)
        else:
            named = range(int(match[2]), int(match[2]) + 1)
        if any(is_success(code) for code in named):
            raise ValueError(f"{item!r} is a success; 2xx responses are never retried")
        codes.update(named)
    return frozenset(codes)


DEFAULT_RETRYABLE = parse_status_codes(DEFAULT_RETRYABLE_TEXT)


def answer_outcome(status_code: int) -> AttemptOutcome:
    """Return the outcome of an attempt by its answer's status (0: no answer came)."""
    if not status_code:
        return AttemptOutcome.NETWORK_ERROR
    return AttemptOutcome.SUCCESS if is_success(status_code) else AttemptOutcome.HTTP_ERROR


def classify(status_code: int,
             retryable: frozenset[int] = DEFAULT_RETRYABLE) -> Classification:
    """Return SUCCEEDED, RETRY or FAIL for a response status (0: no response at all)."""
    if is_success(status_code):
        return SUCCEEDED
    if status_code == 0 or status_code in retryable:
        return RETRY
    return FAIL


def status_class(status_code: int) -> str:
    """Return the status family for metrics: `1xx`..`5xx`, `none` (no response) or `other`."""
    if status_code == 0:
        return "none"
    if 100 <= status_code <= 599:
        return f"{status_code // 100}xx"
    return "other"


def _http_date(text: str, now: datetime) -> datetime | None:
    """Return the moment an RFC 9110 HTTP-date names, or None."""
    for pattern in _HTTP_DATES:
        match = pattern.fullmatch(text)
        if match:
            break
    else:
        return None
    month = _MONTHS.get(match["month"].lower())
    if month is None:
        return None
    year = int(match["year"])
    if len(match["year"]) == 2:
        # RFC 9110 5.6.7: a two-digit year is the one within 50 years of now, future first.
        year += now.year // 100 * 100
        if year > now.year + 50:
            year -= 100
        elif year <= now.year - 50:
            year += 100
    day, hour, minute, second = (int(match[name]) for name in ("day", "hour", "minute", "second"))
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


def parse_retry_after(value: str | None, *, now: datetime) -> float | None:
    """Return the seconds a Retry-After header asks to wait, or None when absent or invalid."""
    if value is None:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):
        return float(text)
    moment = _http_date(text, now)
    if moment is None:
        return None
    return max(0.0, (moment - now).total_seconds())

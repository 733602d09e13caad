"""Parse the text of one setting, raising ValueError with what is wrong with it."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

from db.errors import InvalidInput
from db.pool import check_dsn
from db.tenants import check_uid

E = TypeVar("E", bound=StrEnum)


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"invalid boolean {text!r}: use true or false")


def int_between(low: int, high: int) -> Callable[[str], int]:
    """Return a parser of integers from `low` to `high`."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"invalid integer {text!r}") from None
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range {low}..{high}")
        return value

    return parse


def one_of(*choices: str) -> Callable[[str], str]:
    """Return a parser of one of `choices`, in any case."""
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"invalid value {text!r}: choose one of {', '.join(choices)}")
        return value

    return parse


def member_of(choices: type[E]) -> Callable[[str], E]:
    """Return a parser of a member of the enum `choices` (by value, in any case)."""
    def parse(text: str) -> E:
        try:
            return choices(text.strip().lower())
        except ValueError:
            raise ValueError(f"invalid value {text!r}: choose one of "
                             f"{', '.join(member.value for member in choices)}") from None

    return parse


def parse_ratio(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"invalid number {text!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"{value} is out of range: above 0, at most 1")
    return value


def parse_cap(text: str) -> int | None:
    """Parse a cap: `auto` (None) or an integer from 1 to 10,000."""
    return None if text.strip().lower() == "auto" else int_between(1, 10_000)(text)


def parse_text(text: str) -> str | None:
    return text.strip() or None


def parse_tenant_uid(text: str) -> str | None:
    """Return a tenant's uid (unset when empty)."""
    uid = parse_text(text)
    if uid is not None:
        try:
            check_uid(uid)
        except InvalidInput as error:
            raise ValueError(str(error)) from None
    return uid


def parse_dsn(text: str) -> str | None:
    dsn = parse_text(text)
    if dsn is not None:
        try:
            check_dsn(dsn)
        except InvalidInput as error:
            raise ValueError(str(error)) from None
    return dsn


def parse_csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_origin_url(text: str) -> str | None:
    """Parse an absolute http(s) URL without query or fragment, its trailing slash dropped."""
    url = parse_text(text)
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query \
            or parts.fragment:
        raise ValueError(f"{url!r}: give an absolute http(s) URL without query or fragment, "
                         "e.g. https://hooks.example.com")
    return url.rstrip("/")


# A CSP source expression: a keyword in quotes, a scheme, or a host source; what would end the
# directive or the header (`;`, `,`, control characters) is not one.
_CSP_SOURCE = re.compile(r"'(self|none)'"
                         r"|[A-Za-z][A-Za-z0-9+.-]*:(//[^\s;,']+)?"
                         r"|[^\s;,':]+(:\d+|:\*)?")


def parse_csp_sources(text: str) -> str:
    """Parse a space-separated list of CSP sources (`'self'`, `https://app.example.com`,
    `*.example.com`); `'none'` stands alone."""
    sources = text.split()
    if not sources:
        raise ValueError("give at least one source, e.g. 'self' or https://app.example.com")
    for source in sources:
        if not _CSP_SOURCE.fullmatch(source):
            raise ValueError(f"{source!r} is not a CSP source (e.g. 'self', "
                             "https://app.example.com, *.example.com)")
    if "'none'" in sources and len(sources) > 1:
        raise ValueError("'none' stands alone")
    return " ".join(sources)

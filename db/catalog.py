"""The catalog of event types: names, descriptions, examples, groups, and versioned JSON Schemas
(draft 2020-12) that the payloads of a type must satisfy. Platform-wide: every tenant sees the
same types.

A schema is compiled once per type and version and kept (a version never changes), so a
publish checks its payload without compiling anything.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from db.rows import as_dict, as_dicts, as_type
from db.sql import QUERIES

MAX_NAME_LENGTH = 255
MAX_SCHEMA_BYTES = 64 * 1024
MAX_EXAMPLES = 10
WILDCARD = "*"
CLOSE_NAMES = 3  # names suggested for an unknown type in strict mode
_SEGMENT = re.compile(r"^[A-Za-z0-9_\-:]+$")


class CatalogMode(StrEnum):
    """Whether types outside the catalog may be published and subscribed to."""

    OPEN = "open"  # any type; the catalog's schemas apply to the types it has
    STRICT = "strict"  # only the catalog's types (and patterns over them)


@dataclass(frozen=True)
class EventType:
    name: str
    description: str
    group_name: str | None
    examples: list[Any]
    schema_version: int  # 0: no schema
    deprecated_at: datetime | None
    deprecated_reason: str | None
    created_at: datetime
    updated_at: datetime
    schema: Any = None  # the current version's schema (None without one)


@dataclass(frozen=True)
class Checked:
    """A type as a publish sees it: the schema version its payloads are checked against (0:
    none), and whether it is deprecated."""

    name: str
    schema_version: int
    deprecated: bool


def check_name(name: str) -> str:
    """Return `name` if it can name an event type: dotted segments of letters, digits, `_`,
    `-` or `:` (`invoice.paid`), at most 255 characters."""
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise InvalidInput(f"name: give 1 to {MAX_NAME_LENGTH} characters")
    if not all(_SEGMENT.match(segment) for segment in name.split(".")):
        raise InvalidInput(f"name: {name!r} is not dotted words (letters, digits, _, - or :, "
                           "e.g. invoice.paid)")
    return name


def is_pattern(subscription: str) -> bool:
    return subscription == WILDCARD or subscription.endswith("." + WILDCARD)


def check_subscription(subscription: str) -> str:
    """Return a config's subscription if it is an event type, `prefix.*` (the types below
    that prefix, at any depth) or `*` (every type); raise InvalidInput otherwise."""
    if WILDCARD in subscription and not is_pattern(subscription):
        raise InvalidInput(f"eventTypes: {subscription!r}: a wildcard stands alone (`*`) or "
                           "ends a dotted prefix (`invoice.*`)")
    if subscription.endswith("." + WILDCARD) and WILDCARD in subscription[:-2]:
        raise InvalidInput(f"eventTypes: {subscription!r}: one wildcard, at the end")
    return subscription


def subscription_patterns(event_type: str) -> list[str]:
    """Return the subscriptions that receive `event_type`: itself, `*`, and each of its dotted
    prefixes followed by `.*` (as `subscription_patterns()` in the database, which the
    fan-out's join reads)."""
    segments = event_type.split(".")
    return [event_type, WILDCARD] + [".".join(segments[:n]) + "." + WILDCARD
                                     for n in range(1, len(segments))]


def covers(allowed: Sequence[str], subscription: str) -> bool:
    """Return whether the subscriptions `allowed` reach everything `subscription` reaches: a
    type is covered by itself or a pattern matching it; `prefix.*` by itself, `*` or a pattern
    of a shorter prefix; `*` by `*` only."""
    if subscription == WILDCARD:
        return WILDCARD in allowed
    if is_pattern(subscription):
        prefix = subscription[:-2]
        wider = [pattern for pattern in subscription_patterns(prefix) if pattern != prefix]
        return subscription in allowed or any(pattern in allowed for pattern in wider)
    return any(pattern in allowed for pattern in subscription_patterns(subscription))


@functools.lru_cache(maxsize=4096)
def _validator(name: str, version: int, schema_text: str) -> Draft202012Validator:
    """Return the compiled schema of one version of a type (a version never changes)."""
    return Draft202012Validator(json.loads(schema_text))


@functools.lru_cache(maxsize=4096)
def _fast_validator(name: str, version: int, schema_text: str) -> Any:
    """Return the same schema compiled by jsonschema-rs, or None if it cannot compile it.

    It says whether a payload is valid hundreds of times faster than the reference
    (measured: a 2 KB schema's payload in 2 µs against 1 ms, which made a publish with a
    schema a third slower than one without). A payload it finds valid is accepted; one it
    does not is judged and worded by the reference, which alone refuses. The two agree on
    draft 2020-12's keywords (tests/unit/test_schema_validators.py); formats are annotations
    for both, as the draft says.
    """
    try:
        return jsonschema_rs.Draft202012Validator(json.loads(schema_text))
    except Exception:  # a schema it cannot read: the reference alone decides
        return None


def check_schema(schema: Any) -> str:
    """Return a JSON Schema (draft 2020-12) as its JSON text, or raise InvalidInput saying what
    is wrong with it."""
    if not isinstance(schema, dict | bool):
        raise InvalidInput("schema: a JSON Schema is an object (or true/false)")
    text = json.dumps(schema, separators=(",", ":"), sort_keys=True)
    if len(text) > MAX_SCHEMA_BYTES:
        raise InvalidInput(f"schema: {len(text)} bytes is over the limit of "
                           f"{MAX_SCHEMA_BYTES} bytes")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}"
                             for p in error.absolute_path)
        raise InvalidInput(f"schema: not a valid JSON Schema at {path}: {error.message}") \
            from None
    return text


def violation(schema_text: str, name: str, version: int, payload: Any) -> str | None:
    """Return why `payload` fails version `version` of type `name`'s schema (the JSON path and
    the rule that failed), or None when it satisfies it."""
    fast = _fast_validator(name, version, schema_text)
    if fast is not None:
        try:
            if fast.is_valid(payload):
                return None
        except Exception:  # a value it cannot take (a huge integer): the reference decides
            pass
    errors = sorted(_validator(name, version, schema_text).iter_errors(payload),
                    key=lambda error: (list(error.absolute_path), error.validator))
    if not errors:
        return None
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"payload does not match schema version {version} of {name!r} at "
            f"{first.json_path}: {first.message} (rule `{first.validator}`){more}")


def close_names(name: str, known: Sequence[str]) -> list[str]:
    """Return the catalog's names closest to `name` (to suggest in strict mode)."""
    return difflib.get_close_matches(name, known, n=CLOSE_NAMES, cutoff=0.5)


def _examples(examples: Any) -> str:
    if examples is None:
        return "[]"
    if not isinstance(examples, list) or len(examples) > MAX_EXAMPLES:
        raise InvalidInput(f"examples: a list of at most {MAX_EXAMPLES} payloads")
    return json.dumps(examples, separators=(",", ":"))


def create(pool: ConnectionPool, *, name: str, description: str = "",
           group_name: str | None = None, examples: Any = None,
           schema: Any = None) -> EventType:
    """Add a type to the catalog (its schema, if given, is version 1); InvalidInput when the
    name is taken or a given example fails the schema."""
    name = check_name(name)
    schema_text = None if schema is None else check_schema(schema)
    _examples_fit(schema_text, examples)
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["insert_event_type"], {
            "name": name, "description": description, "group_name": group_name,
            "examples": _examples(examples), "schema": schema_text})
        if as_dict(cursor) is None:
            raise InvalidInput(f"name: the catalog has an event type {name!r}")
    return get(pool, name)


def update(pool: ConnectionPool, name: str, *, description: str | None = None,
           group_name: str | None = None, set_group: bool = False, examples: Any = None,
           schema: Any = None, set_schema: bool = False) -> EventType:
    """Change a type's description, group or examples; a new schema (or null: none) is a new
    version, the earlier ones staying readable. NotFound for an unknown type."""
    current = get(pool, name)
    schema_text = None if not set_schema or schema is None else check_schema(schema)
    _examples_fit(schema_text if set_schema else _schema_text(current),
                  examples if examples is not None else current.examples)
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["update_event_type"], {
            "name": name, "description": description, "group_name": group_name,
            "set_group": set_group,
            "examples": None if examples is None else _examples(examples),
            "set_schema": set_schema, "schema": schema_text})
        if as_dict(cursor) is None:
            raise NotFound(f"event type {name!r} not found")
    return get(pool, name)


def deprecate(pool: ConnectionPool, name: str, *, reason: str) -> EventType:
    """Mark a type deprecated (it still delivers; its requests say so); NotFound if unknown."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["deprecate_event_type"], {"name": name, "reason": reason})
        if as_dict(cursor) is None:
            raise NotFound(f"event type {name!r} not found")
    return get(pool, name)


def get(pool: ConnectionPool, name: str) -> EventType:
    """Return a type with its current schema; NotFound if the catalog has none of that name."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["get_event_type"], {"name": name})
        row = as_dict(cursor)
    if row is None:
        raise NotFound(f"event type {name!r} not found")
    return as_type(EventType, row)


def schema_of(pool: ConnectionPool, name: str, version: int) -> Any:
    """Return version `version` of a type's schema; NotFound if there is none."""
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["event_type_schema"], {"name": name, "version": version})
        row = as_dict(cursor)
    if row is None:
        raise NotFound(f"event type {name!r} has no schema version {version}")
    return row["schema"]


@dataclass(frozen=True)
class CatalogFilter:
    name_contains: str | None = None
    group: str | None = None
    include_deprecated: bool = False


def page(pool: ConnectionPool, filter: CatalogFilter, *, limit: int,
         after: str | None = None) -> list[EventType]:
    """Return up to `limit` types `filter` matches, by name after `after`."""
    pattern = None
    if filter.name_contains:
        escaped = (filter.name_contains.lower().replace("\\", "\\\\").replace("%", "\\%")
                   .replace("_", "\\_"))
        pattern = f"%{escaped}%"
    with pool.transaction() as cursor:
        cursor.execute(QUERIES["list_event_types"], {
            "pattern": pattern, "group_name": filter.group,
            "include_deprecated": filter.include_deprecated, "after": after, "limit": limit})
        return [as_type(EventType, row) for row in as_dicts(cursor)]


def names(pool: ConnectionPool) -> list[str]:
    """Return every name in the catalog (for the strict mode's checks)."""
    return [row[0] for row in pool.execute("event_type_names")]


def names_in(cursor: Any) -> list[str]:
    """Return every name in the catalog (for close-name suggestions), in the caller's
    transaction."""
    cursor.execute(QUERIES["event_type_names"])
    return [row[0] for row in cursor.fetchall()]


def unknown_type(name: str, known: Sequence[str]) -> str:
    """Say that the catalog has no type `name`, and which of its names are close."""
    close = close_names(name, known)
    suggestion = f"; did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    return f"the catalog has no event type {name!r} (the catalog is strict){suggestion}"


def checked_types(cursor: Any, types: Sequence[str]) -> dict[str, tuple[Checked, str | None]]:
    """In the caller's transaction, return the catalog's entries for `types` that it has, each
    with its current schema's text (None without one)."""
    cursor.execute(QUERIES["catalog_of_types"], {"types": sorted(set(types))})
    return {row["name"]: (Checked(row["name"], row["schema_version"], row["deprecated"]),
                          row["schema"])
            for row in as_dicts(cursor)}


def _schema_text(current: EventType) -> str | None:
    return None if current.schema is None else json.dumps(
        current.schema, separators=(",", ":"), sort_keys=True)


def _examples_fit(schema_text: str | None, examples: Any) -> None:
    """Raise InvalidInput when an example fails the schema it is shown beside."""
    if schema_text is None or not examples:
        return
    validator = Draft202012Validator(json.loads(schema_text))
    for number, example in enumerate(examples, start=1):
        error = next(iter(sorted(validator.iter_errors(example),
                                 key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            raise InvalidInput(f"examples: example {number} does not match the schema at "
                               f"{error.json_path}: {error.message} (rule `{error.validator}`)")

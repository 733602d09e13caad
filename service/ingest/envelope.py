"""Read one broker message as an event, or say precisely why it can never be one.

Pure: no clock, network or database. A message's value is a UTF-8 JSON object:

- `type`: required, a non-empty string.
- `id`: a string or an integer (read as its decimal text); else `idempotencyKey`, same
  rules; else `<topic>:<partition>:<offset>`, so a redelivered message maps to the same
  event. A present `null` counts as absent; any other type is refused, since silently
  deriving an id would break the producer's idempotency.
- `payload`, else `data` (any JSON, `null` included); the whole object when both are absent.
- `date`, else `timestamp`: an RFC 3339 string (no offset: UTC) or epoch seconds or
  milliseconds. When absent or unreadable the broker's record timestamp is used; an
  unreadable date is not a reason to refuse an event (with neither `payload` nor `data`
  it still reaches the endpoint inside the payload).

Beside the value, the message key is recorded as it is (never required) and gives the event's
ordering key (db.event_keys: its text, or an encoded form of any other key; an empty key is
none), so no key is a reason to refuse a message. The `traceparent`/`tracestate` headers are
kept when valid (service.policy.trace_context); every other header, and an invalid trace
context, is ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from db.errors import InvalidInput
from db.event_keys import ordering_key
from db.events import UNRESOLVED_TENANT, NewEvent, new_event
from db.json_types import described
from db.rejected import RejectedEvent
from db.scope import DEFAULT_TENANT_UID
from db.tenants import check_uid
from db.vocabulary import PoisonKind
from service.policy.trace_context import from_headers

Headers = Sequence[tuple[str, bytes | None]]

TENANT_HEADER = "webhook-tenant"  # a message header that names the event's tenant by uid
# Epoch numbers at least this large are milliseconds: 1e11 s is the year 5138, 1e11 ms 1973.
EPOCH_MILLIS_FROM = 100_000_000_000


class Poison(ValueError):
    """A message that can never become an event; `kind` labels why (and the metric)."""

    def __init__(self, kind: PoisonKind, detail: str, *, tenant_uid: str | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.tenant_uid = tenant_uid  # the tenant it named, when no such tenant exists

    @property
    def reason(self) -> str:
        return str(self)


def derived_id(topic: str, partition: int, offset: int) -> str:
    """Return the event id of a message that names none: its position in the broker."""
    return f"{topic}:{partition}:{offset}"


def parse(
    value: bytes | None,
    *,
    topic: str,
    partition: int,
    offset: int,
    max_payload: int,
    timestamp_ms: int | None = None,
    key: bytes | None = None,
    headers: Headers | None = None,
) -> NewEvent:
    """Return the event a message's value carries, or raise Poison saying why it cannot."""
    if value is None:
        raise Poison(PoisonKind.TOMBSTONE, "the message has no value")
    if len(value) > max_payload:
        raise Poison(PoisonKind.TOO_LARGE,
                     f"{len(value)} bytes is over the limit of {max_payload} bytes")
    try:
        text = value.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Poison(PoisonKind.INVALID_UTF8, f"byte {error.start}: {error.reason}") from None
    document = _load(text)
    if not isinstance(document, dict):
        raise Poison(PoisonKind.NOT_AN_OBJECT,
                     f"the value is {described(document)}, not an object")
    event_type = document.get("type")
    if not isinstance(event_type, str):
        detail = ("no `type`" if "type" not in document
                  else f"`type` is {described(event_type)}")
        raise Poison(PoisonKind.NO_TYPE, f"{detail}; it must be a string")
    event_id = _given_id(document)
    if event_id is None:
        event_id = derived_id(topic, partition, offset)
    if "payload" in document:
        payload = document["payload"]
    elif "data" in document:
        payload = document["data"]
    else:
        payload = document
    occurred_at = _instant(document.get("date")) or _instant(document.get("timestamp"))
    if occurred_at is None and timestamp_ms is not None and timestamp_ms > 0:
        occurred_at = _from_epoch(timestamp_ms / 1000)
    tenant_uid = _tenant_uid(document, headers)
    try:
        event = new_event(event_id, event_type, payload, max_payload=max_payload,
                          occurred_at=occurred_at, tenant_id=UNRESOLVED_TENANT)
    except InvalidInput as error:
        raise Poison(PoisonKind.INVALID_EVENT, str(error)) from None
    trace = from_headers(headers)
    return replace(event, key=key, ordering_key=ordering_key(key), tenant_uid=tenant_uid,
                   trace_parent=trace and trace.parent, trace_state=trace and trace.state)


def _tenant_uid(document: dict[str, Any], headers: Headers | None) -> str:
    """Return the uid of the tenant a message names (the default tenant's when it names none),
    or raise Poison when it cannot name one or names two."""
    named = []
    given = document.get("tenant")
    if given is not None:
        if not isinstance(given, str):
            raise Poison(PoisonKind.INVALID_TENANT,
                         f"`tenant` is {described(given)}; it must be a tenant's uid")
        named.append(given)
    for name, value in headers or ():
        if isinstance(name, str) and name.lower() == TENANT_HEADER:
            try:
                named.append((value or b"").decode("utf-8"))
            except UnicodeDecodeError:
                raise Poison(PoisonKind.INVALID_TENANT,
                             f"the {TENANT_HEADER} header is not UTF-8 text") from None
    if not named:
        return DEFAULT_TENANT_UID
    if len(set(named)) > 1:
        raise Poison(PoisonKind.INVALID_TENANT,
                     "the message names more than one tenant: "
                     + ", ".join(f'"{uid}"' for uid in dict.fromkeys(named)))
    try:
        return check_uid(named[0])
    except InvalidInput as error:
        raise Poison(PoisonKind.INVALID_TENANT, f"tenant {named[0]!r}: {error}") from None


def _load(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise Poison(PoisonKind.INVALID_JSON, "nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, NaN/Infinity, integers over 4300 digits
        raise Poison(PoisonKind.INVALID_JSON, str(error)) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _given_id(document: dict[str, Any]) -> str | None:
    for key in ("id", "idempotencyKey"):
        value = document.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return value  # new_event refuses an empty or overlong one
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise Poison(PoisonKind.INVALID_ID,
                     f"`{key}` is {described(value)}; it must be a string or an integer")
    return None


def _instant(value: Any) -> datetime | None:
    """Return the UTC instant an RFC 3339 string or epoch number names, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        return _from_epoch(value / 1000 if abs(value) >= EPOCH_MILLIS_FROM else value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().upper())
        except ValueError:
            return None
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError):
            return None
    return None


def _from_epoch(seconds: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def read_again(message: RejectedEvent, *, max_payload: int) -> NewEvent:
    """Return the event a rejected message carries after all (read as it was sent, with its
    key and headers), its tenant still to be looked up; raise InvalidInput saying why it
    still cannot be one."""
    try:
        return parse(message.raw, topic=message.topic, partition=message.partition,
                     offset=message.offset, max_payload=max_payload, key=message.key,
                     headers=message.headers)
    except Poison as poison:
        raise InvalidInput(poison.reason) from None

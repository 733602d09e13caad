"""The catalog entries of the operational events: each type's description, JSON Schema (draft
2020-12) and example, in the group `operational`. The worker that announces them registers
them (db.operational.register_types), so the schema a payload is checked against is the one
written beside the code that builds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from db.vocabulary import OperationalEvent

GROUP = "operational"


@dataclass(frozen=True)
class Entry:
    description: str
    schema: dict[str, Any]
    example: dict[str, Any]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(properties), "properties": properties,
            "additionalProperties": False}


_TEXT = {"type": "string"}
_TEXT_OR_NULL = {"type": ["string", "null"]}
_COUNT_OR_NULL = {"type": ["integer", "null"]}
_COMMON = {
    "tenant": _object({"uid": _TEXT}),
    "config": _object({"id": _TEXT, "name": _TEXT_OR_NULL}),
    "reason": _TEXT_OR_NULL,
    "link": {**_TEXT, "description": "the dashboard page of the object (an absolute URL when "
                                     "WEBHOOKS_PUBLIC_URL is set, else a path on the web "
                                     "process)"},
    "occurredAt": {**_TEXT, "format": "date-time"},
}
_ACTOR = {"actor": {**_TEXT_OR_NULL,
                    "description": "who made the change (an API token's name); null when "
                                   "the service did"}}
_DELIVERY = {"delivery": _object({
    "id": _TEXT, "eventId": _TEXT, "eventType": _TEXT,
    "attempts": {"type": "integer"}, "replayGeneration": {"type": "integer"},
    "lastStatusCode": _COUNT_OR_NULL, "orderingKey": _TEXT_OR_NULL, "sequence": _COUNT_OR_NULL,
})}


def _schema(title: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
            **_object(properties)}


_CONFIG_ID = "0b7c5f3e-2a41-4c6e-9d0f-5e8a1b2c3d4e"
_EXAMPLE = {
    "tenant": {"uid": "acme"},
    "config": {"id": _CONFIG_ID, "name": "Orders"},
    "link": f"https://hooks.example.com/#/configs/{_CONFIG_ID}",
    "occurredAt": "2025-05-01T12:00:00.000000+00:00",
}
_EXAMPLE_DELIVERY = {"id": "4821", "eventId": "ord_1001", "eventType": "order.created",
                     "attempts": 15, "replayGeneration": 0, "lastStatusCode": 503,
                     "orderingKey": None, "sequence": None}

TYPES: dict[OperationalEvent, Entry] = {
    OperationalEvent.ENDPOINT_DISABLED: Entry(
        "A customer's endpoint was disabled: it answered 410 Gone, or an operator deactivated "
        "it. Its pending deliveries were cancelled.",
        _schema("endpoint.disabled", {**_COMMON, **_ACTOR}),
        {**_EXAMPLE, "reason": "endpoint answered 410 Gone", "actor": None},
    ),
    OperationalEvent.ENDPOINT_CIRCUIT_OPENED: Entry(
        "A customer's endpoint kept failing and its circuit opened: nothing is sent to it "
        "until a probe succeeds (its deliveries wait, their retry windows stopped).",
        _schema("endpoint.circuit_opened", {**_COMMON, **_ACTOR}),
        {**_EXAMPLE, "reason": "20 consecutive failures", "actor": None},
    ),
    OperationalEvent.ENDPOINT_RECOVERED: Entry(
        "A customer's endpoint recovered: its circuit closed again (a probe succeeded, or an "
        "operator reset it) and its backlog is being delivered.",
        _schema("endpoint.recovered", {**_COMMON, **_ACTOR}),
        {**_EXAMPLE, "reason": "the probe succeeded", "actor": None},
    ),
    OperationalEvent.DELIVERY_EXHAUSTED: Entry(
        "A delivery to a customer's endpoint failed for good: its attempts or its retry window "
        "ran out. It can be replayed.",
        _schema("delivery.exhausted", {**_COMMON, **_DELIVERY}),
        {**_EXAMPLE, "link": "https://hooks.example.com/#/deliveries/4821",
         "reason": "HTTP 503; retry budget exhausted: 15 attempts (WEBHOOKS_MAX_ATTEMPTS)",
         "delivery": _EXAMPLE_DELIVERY},
    ),
    OperationalEvent.ORDERING_KEY_BLOCKED: Entry(
        "A failed delivery now holds its ordering key: the later deliveries of the key wait "
        "until it is replayed and succeeds, or is skipped.",
        _schema("ordering.key_blocked", {**_COMMON, "orderingKey": _TEXT, **_DELIVERY}),
        {**_EXAMPLE, "reason": "HTTP 422: not retried (only 408, 429, 5xx and network errors "
                               "are)",
         "orderingKey": "customer-42",
         "delivery": {**_EXAMPLE_DELIVERY, "attempts": 1, "lastStatusCode": 422,
                      "orderingKey": "customer-42", "sequence": 7}},
    ),
}

"""The payloads of the operational events against their catalog entries, and the examples the
docs show against the catalog's."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from jsonschema import Draft202012Validator

from db.operational import Announcement, payload
from db.operational_types import TYPES
from db.vocabulary import OperationalEvent
from tests.helpers import ROOT

DOCS = (ROOT / "docs" / "operational-events.md").read_text()
DELIVERY = {"id": 7, "event_id": "ord_1", "event_type": "order.created", "attempts": 3,
            "replay_generation": 1, "last_status_code": None, "ordering_key": "k",
            "sequence": 2}


def announcement(kind: OperationalEvent, **given) -> Announcement:
    delivery = None if kind.startswith("endpoint.") else DELIVERY
    return Announcement(**{
        "event_id": f"{kind}:x:1", "type": kind, "tenant_uid": "acme", "config_id": "c/1",
        "config_name": None, "reason": None, "actor": None, "delivery": delivery,
        "occurred_at": datetime(2025, 5, 1, 12, tzinfo=UTC), **given})


def test_every_type_has_a_catalog_entry():
    assert list(TYPES) == list(OperationalEvent)


@pytest.mark.parametrize("kind", list(OperationalEvent))
@pytest.mark.parametrize("public_url", [None, "https://hooks.example.com"])
def test_a_payload_satisfies_its_types_schema(kind, public_url):
    schema = TYPES[kind].schema
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(TYPES[kind].example)
    built = payload(announcement(kind, reason="why", actor="ops"), public_url)
    Draft202012Validator(schema).validate(built)
    assert built["link"].startswith((public_url or "") + "/#/")


def test_links_name_the_page_of_the_object():
    exhausted = payload(announcement(OperationalEvent.DELIVERY_EXHAUSTED), None)
    blocked = payload(announcement(OperationalEvent.ORDERING_KEY_BLOCKED), "https://h.example")
    assert exhausted["link"] == "/#/deliveries/7"
    assert blocked["link"] == "https://h.example/#/configs/c%2F1"  # the id is quoted
    assert blocked["orderingKey"] == "k"


@pytest.mark.parametrize("kind", list(OperationalEvent))
def test_the_docs_show_the_catalogs_example(kind):
    section = DOCS.split(f"### `{kind}`", 1)[1]
    shown = re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1)
    assert json.loads(shown) == TYPES[kind].example

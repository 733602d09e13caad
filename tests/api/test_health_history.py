"""A config's health history: every pause, resume, reset, circuit transition, deactivation
and 410 kept as a row (who, when, why), queryable newest first and paged."""

from __future__ import annotations

import io
import json
import logging

from db import configs, health, portal_sessions, tenants, tokens
from db.scope import PLATFORM
from db.vocabulary import PortalCapability
from service.runtime import logs
from tests.api.conftest import Api
from tests.api.test_config_health import PAUSE, RESET, RESUME
from tests.endpoint_health import RULES, events_for, open_circuit

HISTORY = """query ($id: ID!, $first: Int, $after: String) {
  config(id: $id) { healthChanges(first: $first, after: $after) {
    edges { node { change actor reason changedAt } } hasNextPage endCursor } } }"""


def history(api, config_id, **paging):
    return api.data(HISTORY, {"id": config_id, **paging})["config"]["healthChanges"]


def changes(api, config_id):
    return [(n["change"], n["actor"], n["reason"])
            for n in (e["node"] for e in history(api, config_id, first=100)["edges"])]


def test_every_change_is_a_row_with_who_and_why_newest_first(api, make):
    config = make.config()
    api.data(PAUSE.replace("$id: ID!", "$id: ID!, $reason: String").replace(
        "pauseConfig(id: $id)", "pauseConfig(id: $id, reason: $reason)"),
        {"id": config.id, "reason": "receiver migrating"})
    api.data(PAUSE, {"id": config.id})  # a no-op leaves no row
    api.data(RESUME, {"id": config.id})
    events_for(make, config, RULES.failures_to_open)
    open_circuit(make, config)  # the service's own change: no actor
    api.data(RESET, {"id": config.id})
    configs.deactivate(make.pool, PLATFORM, config.id, reason="endpoint answered 410 Gone")
    assert changes(api, config.id) == [
        ("DEACTIVATED", None, "endpoint answered 410 Gone"),
        ("CLOSED", "ops", "circuit reset by an operator"),
        ("OPENED", None, f"{RULES.failures_to_open} consecutive failures"),
        ("RESUMED", "ops", "resumed by an operator"),
        ("PAUSED", "ops", "receiver migrating"),
    ]


def test_the_history_pages_newest_first_without_gaps_or_repeats(api, make):
    config = make.config()
    for _ in range(5):
        api.data(PAUSE, {"id": config.id})
        api.data(RESUME, {"id": config.id})
    seen, after = [], None
    while True:
        page = history(api, config.id, first=3, after=after)
        seen += [e["node"]["change"] for e in page["edges"]]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert seen == ["RESUMED", "PAUSED"] * 5


def test_a_cursor_of_another_listing_is_refused(api, make):
    config = make.config()
    error = api.error(HISTORY, {"id": config.id, "after": "bm9wZQ"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_the_audit_trail_is_written_whatever_the_log_level():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        logs.configure("warning", stream)
        logging.getLogger("webhooks.audit").info("audit", extra={"audit": "pauseConfig"})
        logging.getLogger("webhooks.dispatcher").info("attempt")  # below the level: dropped
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
        logging.getLogger("webhooks.audit").setLevel(logging.NOTSET)
        logging.getLogger("webhooks.health").setLevel(logging.NOTSET)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["audit"]


def test_a_tenant_reads_that_the_platform_acted_not_which_token_or_person(api, client, make):
    """The names of the platform's tokens and of its on-call people are the platform's: a
    tenant's token and portal session read `platform` for them, and the names of their own."""
    shop = tenants.create(make.pool, uid="shop")
    config = make.config(tenant_id=shop.id)
    own = Api(client, tokens.create(make.pool, name="shop-ops", role="operator",
                                    tenant_id=shop.id)[1])
    session = Api(client, portal_sessions.create(
        make.pool, tenant_id=shop.id, expires_in=3600, capabilities=list(PortalCapability),
        event_types=None, created_by="ops").token)
    session_name = make.column("SELECT 'portal-session:' || id FROM portal_sessions")[0]
    health.pause(make.pool, PLATFORM, config.id, reason="on call", actor="cli:alice")
    api.data(RESUME, {"id": config.id})  # the platform's token `ops`
    own.data(PAUSE, {"id": config.id})
    session.data(RESUME, {"id": config.id})
    actors = ["RESUMED", "PAUSED", "RESUMED", "PAUSED"]
    assert [(c, a) for c, a, _ in changes(api, config.id)] == list(zip(actors, [
        session_name, "shop-ops", "ops", "cli:alice"], strict=True))
    for tenant_side in (own, session):
        assert [(c, a) for c, a, _ in changes(tenant_side, config.id)] == list(zip(actors, [
            session_name, "shop-ops", "platform", "platform"], strict=True))


def test_a_health_line_names_the_token_and_the_tenant_it_acts_for(client, make):
    shop = tenants.create(make.pool, uid="shop")
    config = make.config(tenant_id=shop.id)
    own = Api(client, tokens.create(make.pool, name="shop-ops", role="operator",
                                    tenant_id=shop.id)[1])
    stream = io.StringIO()
    logs.configure("info", stream)
    try:
        own.data(PAUSE, {"id": config.id})
    finally:
        logs.configure("warning")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    (paused,) = [line for line in lines if line["logger"] == "webhooks.health"]
    assert (paused["message"], paused["config_id"], paused["actor"], paused["tenant"]) == (
        "config paused", config.id, "shop-ops", "shop")

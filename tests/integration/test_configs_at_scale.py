"""Configs by the ten thousand: an event's subscribers are found by index, a rare search by
trigrams, a held health state by the held configs' index; nothing reads every config."""

from __future__ import annotations

import json

import psycopg2

from db import configs, events
from db.catalog import subscription_patterns
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from db.sql import QUERIES
from tests.helpers import plans_as_run

MANY = 25_000


def _add_many(make, *, event_type: str = "other") -> None:
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types) "
            "SELECT 1, 'many-' || g, 'customer ' || g, 'https://h' || g || '.example.com/in', "
            "'whsec_x', ARRAY[%s, 'more.' || (g %% 100)] FROM generate_series(1, %s) g",
            (event_type, MANY))
        cursor.execute("ANALYZE configs")
        cursor.execute("ANALYZE config_health")


def _plan(make, statement: str, params: dict) -> dict:
    connection = psycopg2.connect(make.pool.dsn)
    try:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) "
                           + cursor.mogrify(statement, params).decode())
            (plan,) = cursor.fetchone()[0]
        connection.rollback()
    finally:
        connection.close()
    return plan["Plan"]


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _reads_of(plan: dict, relation: str) -> list[dict]:
    return [n for n in _nodes(plan) if n.get("Relation Name") == relation]


def test_an_events_subscribers_are_found_through_the_subscriptions_index(make):
    _add_many(make)
    subscribed = [make.config(event_types=["order.paid"]).id for _ in range(3)]
    event = events.new_event("evt-1", "order.paid", {}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1 << 20)
    with make.pool.connection() as conn, conn.cursor() as cursor:
        statement = cursor.mogrify(QUERIES["ingest_events"], {
            "ids": [event.id], "tenant_ids": [event.tenant_id],
            "batch_tenants": [event.tenant_id], "types": [event.type],
            "payloads": [event.payload], "patterns": subscription_patterns(event.type),
            "schema_versions": [None], "occurred_at": [None], "keys": [None],
            "ordering_keys": [None], "trace_parents": [None], "trace_states": [None],
            "filtered_positions": [], "filtered_configs": [], "source": "api"}).decode()
    plan = plans_as_run(make.pool.dsn, statement)  # the subscribers' look-up is a function
    assert any(n.get("Index Name") in ("configs_subscribed", "configs_subscribed_in_tenant")
               for n in _nodes(plan)), json.dumps(plan)
    assert all(n["Node Type"] != "Seq Scan" for n in _reads_of(plan, "configs"))
    with make.pool.transaction() as cursor:
        counts = events.ingest(cursor, [event], source="api")
    assert counts.deliveries_created == len(subscribed)


def test_a_rare_search_and_a_held_state_read_their_own_index_not_every_config(make):
    _add_many(make)
    wanted = make.config(name="Acme Ledger", event_types=["x"])
    for name, filter in (("search", configs.ConfigFilter(search="acme led")),
                         ("held", configs.ConfigFilter(health_state="paused"))):
        params = {**PLATFORM.params(), **filter.params(), "cursor_time": None,
                  "cursor_id": None, "limit": 11,
                  "walk": configs.WALK, "bound": 10_000}
        for statement in ("list_configs_matched", "count_configs"):
            plan = _plan(make, QUERIES[statement], params)
            for node in _reads_of(plan, "configs") + _reads_of(plan, "config_health"):
                assert node["Node Type"] != "Seq Scan", (name, statement, json.dumps(plan))
    assert [c.id for c in configs.page(make.pool, PLATFORM, limit=11,
                                       filter=configs.ConfigFilter(search="ACME LED"))] \
        == [wanted.id]

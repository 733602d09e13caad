"""Tenant.stats reads each tenant's own rows through its own indexes, even when the statistics
were taken before a burst made deliveries due (then the claim's partial indexes, of the pending
deliveries and of the ready configs, look empty to the planner, and reading them filtered by
tenant walks every tenant's rows once per tenant of the page)."""

from __future__ import annotations

import json

import psycopg2

from db import tenants
from db.scope import PLATFORM
from db.sql import QUERIES

TENANTS = 300
DUE_EACH = 10  # pending deliveries of each config of every third tenant


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def test_tenant_stats_read_each_tenants_own_rows_whatever_the_statistics(make):
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO tenants (uid, name) SELECT 'p' || g, 'p' || g"
            " FROM generate_series(1, %s) g", (TENANTS,))
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types)"
            " SELECT t.id, 'c-' || t.id || '-' || k, 'c', 'https://e.example.com/in',"
            " 'whsec_x', ARRAY['a.b'] FROM tenants t, generate_series(1, 2) k WHERE t.id > 1")
        cursor.execute("ANALYZE deliveries")  # taken while nothing is due
        cursor.execute("ANALYZE config_health")
        cursor.execute(
            "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source)"
            " SELECT t.id, 'e' || k, 'a.b', '{}', now(), 'api' FROM tenants t,"
            " generate_series(1, %s) k WHERE t.id %% 3 = 0", (DUE_EACH,))
        cursor.execute(
            "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type,"
            " next_attempt_at) SELECT e.tenant_id, e.id, c.id, e.type, now() - interval '1 s'"
            " FROM events e JOIN configs c ON c.tenant_id = e.tenant_id")
        cursor.execute("SELECT id FROM tenants ORDER BY id DESC LIMIT 100")
        ids = [row[0] for row in cursor.fetchall()]

    connection = psycopg2.connect(make.pool.dsn)
    try:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES["tenant_stats"],
                           {"ids": ids, "bound": tenants.STATS_BOUND})
            (plan,) = cursor.fetchone()[0]
    finally:
        connection.close()
    read = {(n["Relation Name"], n.get("Index Name")) for n in _nodes(plan["Plan"])
            if n.get("Relation Name") in ("deliveries", "config_health")}
    assert read == {("deliveries", "deliveries_tenant_status"),
                    ("config_health", "config_health_of_tenant")}, json.dumps(plan)

    stats = tenants.stats(make.pool, PLATFORM, ids)
    busy = [id for id in ids if id % 3 == 0]
    assert {stats[id].pending for id in busy} == {2 * DUE_EACH}
    assert all(stats[id].oldest_due_age_seconds >= 1 for id in busy)
    assert all(stats[id].pending == 0 and stats[id].oldest_due_age_seconds is None
               for id in ids if id % 3)

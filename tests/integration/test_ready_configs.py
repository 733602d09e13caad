"""The ready set: each config's health row knows when its earliest pending delivery is due,
kept in step with the deliveries by every statement that changes them, concurrent ones
included; the claim and the next-due check read only the configs with something pending."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, datetime, timedelta

import gevent
import psycopg2

from db import deliveries, health
from db.scope import PLATFORM
from db.sql import QUERIES
from tests.endpoint_health import RULES, claim, events_for, result, row, stage
from tests.helpers import plans_as_run

DISAGREEMENTS = """
SELECT h.config_id, h.next_due_at, truth.due
FROM config_health h
LEFT JOIN LATERAL (SELECT min(d.next_attempt_at) AS due FROM deliveries d
                   WHERE d.config_id = h.config_id AND d.status = 'pending') truth ON true
WHERE h.next_due_at IS DISTINCT FROM truth.due
"""


def disagreements(make) -> list[tuple]:
    with make.pool.transaction() as cursor:
        cursor.execute(DISAGREEMENTS)
        return cursor.fetchall()


def test_the_next_due_time_follows_ingest_claim_retry_success_and_expedite(make):
    config = make.config()
    assert row(make, config.id)["next_due_at"] is None
    events_for(make, config, 3)
    assert row(make, config.id)["next_due_at"] is not None
    claimed = claim(make, limit=10)
    assert len(claimed) == 3
    assert row(make, config.id)["next_due_at"] is None  # nothing pending while in flight
    retry = dataclasses.replace(result(claimed[0], 503), next_delay=600.0)
    deliveries.record_and_settle(make.pool, [retry, result(claimed[1], 200),
                                             result(claimed[2], 200)], RULES)
    assert disagreements(make) == []
    due = row(make, config.id)["next_due_at"]
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT next_attempt_at FROM deliveries WHERE id = %s", (claimed[0].id,))
        assert cursor.fetchone()[0] == due  # the retry, ten minutes from now
    with make.pool.transaction() as cursor:
        deliveries.replay(cursor, PLATFORM, claimed[0].id)  # expedited: due now
    assert row(make, config.id)["next_due_at"] < due
    assert disagreements(make) == []


def test_cancelled_and_deleted_deliveries_leave_the_ready_set(make):
    config = make.config()
    events_for(make, config, 2)
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL "
                       "WHERE config_id = %s AND id = (SELECT min(id) FROM deliveries "
                       "WHERE config_id = %s)", (config.id, config.id))
    assert row(make, config.id)["next_due_at"] is not None
    with make.pool.transaction() as cursor:
        cursor.execute("DELETE FROM deliveries WHERE config_id = %s AND status = 'pending'",
                       (config.id,))
    assert row(make, config.id)["next_due_at"] is None
    assert disagreements(make) == []


def test_concurrent_statements_on_the_same_configs_leave_the_true_next_due_time(make):
    """Eight sessions at once insert, claim, retry, finish and delete deliveries of the same
    five configs, each statement in its own transaction, held open a moment so that the others
    run into it; whatever order they commit in, every health row ends with its config's
    earliest pending due time."""
    configs = [make.config(event_types=[f"t{n}"]) for n in range(5)]
    ids = [c.id for c in configs]
    events = [make.event(type=f"t{n % 5}")[0] for n in range(40)]
    dsn = make.pool.dsn

    def session(seed: int) -> None:
        rng = random.Random(seed)
        connection = psycopg2.connect(dsn)
        try:
            with connection.cursor() as cursor:
                for _ in range(60):
                    config_id = rng.choice(ids)
                    step = rng.randrange(5)
                    if step == 0:
                        cursor.execute(
                            "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, "
                            "next_attempt_at) VALUES (1, %s, %s, 'x', now() + %s * interval '1 s') "
                            "ON CONFLICT DO NOTHING",
                            (rng.choice(events), config_id, rng.randrange(-30, 30)))
                    elif step == 1:  # claim the earliest
                        cursor.execute(
                            "UPDATE deliveries SET status = 'delivering', claimed_at = now(), "
                            "claim_token = gen_random_uuid(), next_attempt_at = next_attempt_at "
                            "WHERE id = (SELECT id FROM deliveries WHERE config_id = %s "
                            "AND status = 'pending' ORDER BY next_attempt_at LIMIT 1 "
                            "FOR UPDATE SKIP LOCKED)", (config_id,))
                    elif step == 2:  # a retry, later
                        cursor.execute(
                            "UPDATE deliveries SET status = 'pending', claim_token = NULL, "
                            "next_attempt_at = now() + %s * interval '1 s' WHERE id = "
                            "(SELECT id FROM deliveries WHERE config_id = %s AND status = "
                            "'delivering' LIMIT 1 FOR UPDATE SKIP LOCKED)",
                            (rng.randrange(1, 60), config_id))
                    elif step == 3:  # success
                        cursor.execute(
                            "UPDATE deliveries SET status = 'succeeded', claim_token = NULL, "
                            "next_attempt_at = NULL WHERE id = (SELECT id FROM deliveries "
                            "WHERE config_id = %s AND status = 'delivering' LIMIT 1 "
                            "FOR UPDATE SKIP LOCKED)", (config_id,))
                    else:
                        cursor.execute(
                            "DELETE FROM deliveries WHERE id = (SELECT id FROM deliveries "
                            "WHERE config_id = %s AND status = 'pending' ORDER BY random() "
                            "LIMIT 1 FOR UPDATE SKIP LOCKED)", (config_id,))
                    gevent.sleep(rng.random() * 0.004)  # others' statements wait on this one
                    connection.commit()
        finally:
            connection.close()

    gevent.joinall([gevent.spawn(session, seed) for seed in range(8)], raise_error=True)
    assert disagreements(make) == []


def test_a_claim_reads_no_health_row_of_an_idle_paused_or_open_config(make):
    """Five thousand idle configs, a paused one with a backlog and an open one whose probe is
    an hour away beside one busy config: the claim's and the next-due check's plans read the
    ready set's index, never the whole health table, and touch the health rows of the configs
    a claim could take something of only."""
    busy = make.config(event_types=["busy"])
    paused = make.config(event_types=["paused"])
    events_for(make, busy, 5)
    events_for(make, paused, 5)
    health.pause(make.pool, PLATFORM, paused.id, reason="held")
    waiting = make.config(event_types=["waiting"])  # its circuit open, the probe an hour away
    events_for(make, waiting, 5)
    stage(make, waiting.id, circuit="open",
          next_probe_at=datetime.now(UTC) + timedelta(hours=1))
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types, active) "
            "SELECT 1, 'idle-' || n, 'idle ' || n, 'http://127.0.0.1:9/', 'whsec_x', "
            "ARRAY['idle'], true FROM generate_series(1, 5000) n")
        cursor.execute("ANALYZE config_health")
    params = {"limit": 50, "owner": "w", "cap": RULES.cap, "ramp": RULES.ramp,
              "rate_burst": health.RATE_BURST, "capacity": 50, "hold": 3,
              "room_ids": [], "rooms": [], "token": "00000000-0000-0000-0000-000000000001"}
    plan = _plan(make, "claim_due_deliveries", params)
    scans = list(_health_scans(plan))
    wait_scans = list(_health_scans(_plan(make, "seconds_until_next_due", {
        "cap": RULES.cap, "ramp": RULES.ramp, "saturated": []})))
    assert scans and wait_scans, json.dumps(plan)
    for node in scans + wait_scans:
        assert node["Node Type"] != "Seq Scan", json.dumps(node)
        read = (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        # The ready set holds the busy config alone; the rest are look-ups of that one by id.
        assert read == 1, json.dumps(node)
    assert any(n.get("Index Name") == "config_health_tenant_turns" for n in scans), json.dumps(plan)
    assert any(n.get("Index Name") == "config_health_ready" for n in wait_scans)


def _plan(make, name: str, params: dict) -> dict:
    """Run the named statement (rolled back) and return its plans as they ran."""
    with make.pool.connection() as conn, conn.cursor() as cursor:
        statement = cursor.mogrify(QUERIES[name], params).decode()
    return plans_as_run(make.pool.dsn, statement)


def _claim_plan(make, limit: int) -> dict:
    return _plan(make, "claim_due_deliveries", {
        "limit": limit, "owner": "w", "cap": RULES.cap, "ramp": RULES.ramp,
        "rate_burst": health.RATE_BURST, "capacity": 50, "hold": 3, "room_ids": [],
        "rooms": [], "token": "00000000-0000-0000-0000-000000000002"})


def test_a_claim_walks_the_ready_configs_whatever_the_statistics_say(make):
    """Two thousand configs created and never analysed (as the API leaves them), a thousand
    of them with something due: a claim of ten reads the turns of ten configs, not of the
    thousand; the planner's guess of the ready set's size (nothing known yet) does not make
    it read the whole ready set and sort it."""
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types, active) "
            "SELECT 1, 'fresh-' || n, 'fresh ' || n, 'http://127.0.0.1:9/', 'whsec_x', "
            "ARRAY[CASE WHEN n % 2 = 0 THEN 'ready' ELSE 'idle' END], true "
            "FROM generate_series(1, 2000) n")
    make.event(type="ready")
    scans = list(_health_scans(_claim_plan(make, 10)))
    walks = [n for n in scans if n.get("Index Name") == "config_health_tenant_turns"]
    assert walks and all(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) <= 10
                         for n in walks), json.dumps(scans)
    assert not [n for n in scans if n["Node Type"] == "Bitmap Heap Scan"
                and n["Actual Rows"] + n.get("Rows Removed by Filter", 0) > 10], json.dumps(scans)


def test_claims_walk_the_ready_configs_round_robin_and_read_only_those_they_take(make):
    """Three hundred configs with something due: a claim of ten reads the turns of ten
    configs, not three hundred; thirty such claims serve every config once, none twice."""
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types, active) "
            "SELECT 1, 'ready-' || n, 'ready ' || n, 'http://127.0.0.1:9/', 'whsec_x', "
            "ARRAY['ready'], true FROM generate_series(1, 300) n")
    for _ in range(2):
        make.event(type="ready")
    with make.pool.transaction() as cursor:
        cursor.execute("ANALYZE config_health")
    turns = [n for n in _health_scans(_claim_plan(make, 10))
             if n.get("Index Name") == "config_health_tenant_turns"]
    assert turns and all(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) <= 10
                         for n in turns), json.dumps(turns)
    served = []
    for _ in range(30):
        claimed = claim(make, limit=10)
        served += sorted({c.config_id for c in claimed})
    assert len(served) == len(set(served)) == 300  # a round: each config once


def _health_scans(node: dict):
    if node.get("Relation Name") == "config_health" and node["Node Type"].endswith("Scan"):
        yield node
    for child in node.get("Plans", []):
        yield from _health_scans(child)

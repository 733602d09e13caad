"""Upgrade in place from the former model: migrate keeps configs, backfill converts attempts."""

import json
import os
import subprocess
import sys

import psycopg2
import pytest

from db.migrate import migrate
from db.notifications import Listener
from db.pool import ConnectionPool
from service.ingest import former_model
from tests.former_model import FORMER_SCHEMA
from tests.helpers import PATIENCE, wait_until

SECRET = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"  # plain base64: a former-model secret


def _run(dsn, statement, params=None):
    conn = psycopg2.connect(dsn)
    try:
        with conn, conn.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall() if cursor.description else None
    finally:
        conn.close()


def _attempt(dsn, id, webhook, config, endpoint, ago, status, code, next_retry=None,
             payload=None, retry=0):
    payload = payload if payload is not None else json.dumps(
        {"type": "order.created", "payload": {"webhook": webhook}, "date": "2024-01-01"})
    _run(dsn,
         "INSERT INTO attempts VALUES (%s, %s, now() - %s::interval, now() - %s::interval,"
         " %s, %s, %s, %s, %s, now() + %s::interval)",
         (id, webhook, ago, ago, json.dumps({"id": config, "endpoint": endpoint}), payload,
          code, retry, status, next_retry or "0 seconds"))


@pytest.fixture
def former_database(empty_database_url, receiver):
    dsn = empty_database_url
    for statement in FORMER_SCHEMA:
        _run(dsn, statement)
    _run(dsn, "INSERT INTO configs VALUES ('cfg-1', %s, %s, '{order.created}', true, 'shop',"
              " now(), now())", (receiver.url, SECRET))
    _run(dsn, "INSERT INTO configs VALUES ('cfg-2', 'http://127.0.0.1:9/off', %s,"
              " '{order.created}', false, NULL, now(), now())", (SECRET,))
    _run(dsn, "INSERT INTO configs VALUES ('cfg-3', %s, %s, '{order.created}', true, NULL,"
              " now(), now())", (receiver.url + "/3", SECRET))
    old = "http://old.example/hook"
    _attempt(dsn, "a1", "w1", "cfg-1", old, "10 minutes", "to retry", 500, "-1 minute")
    _attempt(dsn, "a2", "w1", "cfg-1", old, "5 minutes", "to retry", 503, "-1 minute", retry=1)
    _attempt(dsn, "a3", "w2", "cfg-1", old, "2 days", "success", 200)
    _attempt(dsn, "a4", "w3", "cfg-1", old, "10 days", "failed", 404)
    _attempt(dsn, "a5", "w4", "cfg-1", old, "40 days", "success", 200)
    _attempt(dsn, "a6", "w5", "cfg-2", old, "1 hour", "to retry", 500, "-1 minute")
    _attempt(dsn, "a7", "w6", "cfg-gone", old, "1 hour", "to retry", 500, "-1 minute")
    _attempt(dsn, "a8", "w7", "cfg-1", old, "1 hour", "retrying", 0, "1 hour")
    _attempt(dsn, "a9", "w7", "cfg-3", old, "1 hour", "retrying", 0, "1 hour")
    _attempt(dsn, "a10", "w8", "cfg-1", old, "1 day", "success", 200, payload="not json")
    return dsn


def _backfill_cli(dsn, *args):
    env = {**os.environ, "DATABASE_URL": dsn}
    return subprocess.run([sys.executable, "-m", "service", "backfill-deliveries", *args],
                          env=env, capture_output=True, text=True, timeout=PATIENCE)


def _deliveries(dsn):
    return {(e, c): (s, n) for e, c, s, n in _run(
        dsn, "SELECT event_id, config_id, status, attempt_count FROM deliveries")}


def test_migrate_then_backfill_converts_the_former_model(former_database):
    dsn = former_database
    migrate(dsn)
    configs = _run(dsn, "SELECT id, secret, active FROM configs ORDER BY id")
    assert configs == [("cfg-1", SECRET, True), ("cfg-2", SECRET, False),
                       ("cfg-3", SECRET, True)]
    result = _backfill_cli(dsn)
    assert result.returncode == 0, result.stderr
    assert "backfill complete" in result.stderr
    assert _deliveries(dsn) == {
        ("w1", "cfg-1"): ("pending", 2),  # former attempts count: the next is the 3rd
        ("w2", "cfg-1"): ("succeeded", 1),
        ("w3", "cfg-1"): ("failed", 1),
        ("w5", "cfg-2"): ("cancelled", 1),
        ("w7", "cfg-1"): ("pending", 1),
        ("w7", "cfg-3"): ("pending", 1),
        ("w8", "cfg-1"): ("succeeded", 1),
    }
    summary = result.stderr
    for line in ("pending", "succeeded", "failed", "cancelled",
                 "skipped: config gone", "skipped: older than retention"):
        assert line in summary
    (event,) = _run(dsn, "SELECT type, payload::text, source FROM events WHERE id = 'w1'")
    assert event == ("order.created", '{"webhook":"w1"}', "backfill")
    assert _run(dsn, "SELECT type, payload::text FROM events WHERE id = 'w8'") == [
        ("unknown", '"not json"')]
    history = _run(dsn, "SELECT a.attempt_number, a.status_code, a.outcome FROM"
                        " delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id"
                        " WHERE d.event_id = 'w1' ORDER BY a.id")
    assert history == [(1, 500, "http_error"), (2, 503, "http_error")]
    due = _run(dsn, "SELECT next_attempt_at > now() + interval '50 minutes' FROM deliveries"
                    " WHERE event_id = 'w7'")
    assert due == [(True,), (True,)]

    assert _run(dsn, "SELECT count(*) FROM delivery_attempts")[0][0] == 8
    again = _backfill_cli(dsn)
    assert again.returncode == 0, again.stderr
    assert _run(dsn, "SELECT count(*) FROM deliveries")[0][0] == 7
    assert _run(dsn, "SELECT count(*) FROM delivery_attempts")[0][0] == 8
    _run(dsn, "UPDATE backfill_progress SET last_key = '', completed_at = NULL")
    assert _backfill_cli(dsn).returncode == 0  # from scratch again: still nothing doubled
    assert _run(dsn, "SELECT count(*) FROM deliveries")[0][0] == 7
    assert _run(dsn, "SELECT count(*) FROM delivery_attempts")[0][0] == 8


def test_outstanding_retries_are_delivered_by_a_worker(former_database, receiver,
                                                        start_worker, settings):
    dsn = former_database
    migrate(dsn)
    assert _backfill_cli(dsn).returncode == 0
    start_worker(database_url=dsn)
    (request,) = receiver.wait_for(1)
    body = json.loads(request.body)
    assert body["id"] == "w1" and body["data"] == {"webhook": "w1"}
    from standardwebhooks.webhooks import Webhook
    Webhook(SECRET).verify(request.body, request.headers)
    wait_until(lambda: _run(dsn, "SELECT status FROM deliveries WHERE event_id = 'w1'")
               == [("succeeded",)])
    # The two former attempts come first: this is attempt 3 of the same generation.
    assert request.headers["webhook-attempt"] == "3"
    history = _run(dsn, "SELECT a.replay_generation, a.attempt_number, a.outcome FROM"
                        " delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id"
                        " WHERE d.event_id = 'w1' ORDER BY a.id")
    assert history == [(0, 1, "http_error"), (0, 2, "http_error"), (0, 3, "success")]
    assert _run(dsn, "SELECT replay_generation, attempt_count FROM deliveries"
                     " WHERE event_id = 'w1'") == [(0, 3)]


def test_an_interrupted_backfill_resumes_without_doubles(former_database):
    dsn = former_database
    migrate(dsn)
    pool = ConnectionPool(dsn, size=2)
    calls = []

    def interrupt(done, total, counts):
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        former_model.run(pool, keep_succeeded=30 * 86400, keep_failed=90 * 86400, batch_size=2,
                     report=interrupt)
    partial = _run(dsn, "SELECT count(*) FROM deliveries")[0][0]
    assert 0 < partial < 7
    counts = former_model.run(pool, keep_succeeded=30 * 86400, keep_failed=90 * 86400,
                          batch_size=2)
    assert _run(dsn, "SELECT count(*) FROM deliveries")[0][0] == 7
    assert counts["pending"] == 3 and counts["succeeded"] == 2
    assert _run(dsn, "SELECT completed_at IS NOT NULL FROM backfill_progress") == [(True,)]
    pool.close()


def test_a_backfill_that_stores_pending_deliveries_wakes_the_dispatchers(former_database):
    dsn = former_database
    migrate(dsn)
    pool, listener = ConnectionPool(dsn, size=2), Listener(dsn)
    try:
        former_model.run(pool, keep_succeeded=30 * 86400, keep_failed=90 * 86400)
        assert listener.wait(PATIENCE)
        assert not listener.wait(0.2)
        former_model.run(pool, keep_succeeded=30 * 86400, keep_failed=90 * 86400)  # nothing new
        assert not listener.wait(0.2)
    finally:
        listener.close()
        pool.close()


def test_backfill_without_a_former_table_says_so(database_url):
    result = _backfill_cli(database_url)
    assert result.returncode == 0
    assert "nothing to backfill" in result.stderr


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"type": "a", "payload": {"x": 1}}', ("a", {"x": 1})),
        ('{"type": "a", "data": [1]}', ("a", [1])),
        ('{"type": "a", "other": 1}', ("a", {"type": "a", "other": 1})),
        ('{"kind": "a"}', ("unknown", {"kind": "a"})),
        ("[1, 2]", ("unknown", [1, 2])),
        ("nope", ("unknown", "nope")),
        (None, ("unknown", None)),
    ],
)
def test_event_fields_follow_the_envelope_rules(payload, expected):
    assert former_model.event_fields(payload) == expected

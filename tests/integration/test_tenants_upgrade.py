"""The upgrade to tenants of a database made by the release before them: `webhooks migrate`
puts everything into the tenant `default`, leaves the schema a new database gets, and the
old clients, Kafka producers and tokens keep working as they did.

The database is built at the last migration of that release and filled with what it kept,
written with that release's columns (no tenant anywhere); every fixture of the test (the
pool, the worker, the API) then runs on it after `migrate`."""

from __future__ import annotations

import json

import pytest

from db import idempotency
from db.adhoc import dsn_for, sql
from db.migrate import migrate
from db.scope import DEFAULT_TENANT_ID, DEFAULT_TENANT_UID
from db.tokens import digest
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from tests.api.conftest import Api
from tests.helpers import PATIENCE, wait_until
from tests.kafka import consumer_settings

PRE_TENANTS = 27  # the last migration of the release before tenants
OLD_TOKEN = "whk_from-the-release-before-tenants"
OLD_KEY = "replayed-before-the-upgrade"
# Every table whose rows belong to a tenant, and the tenant the upgrade gives the old ones.
TENANT_OWNED = ("configs", "events", "deliveries", "delivery_attempts", "config_health",
                "config_health_changes", "config_attempt_counts", "ordering_keys")
PENDING, SUCCEEDED, REPLAYED = 1, 2, 3  # ids of the old deliveries


def _release_before_tenants(dsn: str, endpoint: str) -> None:
    """Store what the release before kept, with its columns: two configs (one ordered), a
    delivery pending and due, one succeeded after two attempts, one failed then replayed with
    an idempotency key (and the key's remembered result), a health change, attempt counts,
    an ordering key, and an operator token."""
    replay_result = {"replayed": 1, "expedited": 0,
                     "result": {"deliveryId": str(REPLAYED), "action": "REPLAYED",
                                "replayGeneration": 1,
                                "nextAttemptAt": "2030-01-01T00:00:00+00:00"}}
    sql(dsn, """
        INSERT INTO configs (id, name, endpoint, secret, event_types, ordering)
        VALUES ('shop', 'shop', %(endpoint)s, 'whsec_c2hvcC1zZWNyZXQtc2hvcC1zZWNyZXQ=',
                '{order.paid}', 'unordered'),
               ('ledger', 'ledger', %(endpoint)s, 'whsec_bGVkZ2VyLXNlY3JldC1sZWRnZXI=',
                '{ledger.entry}', 'per_key');
        INSERT INTO events (id, type, payload, occurred_at, source, ordering_key) VALUES
            ('evt-pending', 'order.paid', '{"n": 1}', now(), 'kafka', NULL),
            ('evt-succeeded', 'order.paid', '{"n": 2}', now(), 'api', NULL),
            ('evt-replayed', 'order.paid', '{"n": 3}', now(), 'api', NULL);
        INSERT INTO deliveries (id, event_id, config_id, event_type, status, attempt_count,
                                replay_generation, next_attempt_at, last_status_code)
        OVERRIDING SYSTEM VALUE VALUES
            (1, 'evt-pending', 'shop', 'order.paid', 'pending', 0, 0, now(), NULL),
            (2, 'evt-succeeded', 'shop', 'order.paid', 'succeeded', 2, 0, NULL, 200),
            (3, 'evt-replayed', 'shop', 'order.paid', 'pending', 0, 1, '2030-01-01', 500);
        SELECT setval(pg_get_serial_sequence('deliveries', 'id'), 3);
        INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation, endpoint,
                                       outcome, status_code, duration_ms) VALUES
            (2, 1, 0, %(endpoint)s, 'http_error', 503, 5),
            (2, 2, 0, %(endpoint)s, 'success', 200, 5),
            (3, 1, 0, %(endpoint)s, 'http_error', 500, 5);
        INSERT INTO config_health_changes (config_id, change, actor, reason)
            VALUES ('shop', 'paused', 'ops', 'receiver migrating');
        INSERT INTO config_attempt_counts (config_id, period_start, attempts, succeeded)
            VALUES ('shop', date_trunc('minute', now()), 3, 1);
        INSERT INTO ordering_keys (config_id, ordering_key, last_sequence)
            VALUES ('ledger', 'account-7', 4);
        INSERT INTO replay_requests (idempotency_key, request_fingerprint, result)
            VALUES (%(key)s, %(fingerprint)s, %(result)s);
        INSERT INTO api_tokens (name, role, token_hash) VALUES ('ops', 'operator', %(token)s);
        """, {"endpoint": endpoint, "key": OLD_KEY, "result": json.dumps(replay_result),
              "fingerprint": idempotency.fingerprint("replayDelivery", {"id": REPLAYED}),
              "token": digest(OLD_TOKEN)})


@pytest.fixture
def database_url(server_dsn, database_factory, receiver):
    """A database of the release before tenants, with its data, upgraded by `migrate`."""
    dsn = dsn_for(server_dsn, database_factory())
    migrate(dsn, up_to=PRE_TENANTS)
    _release_before_tenants(dsn, receiver.url)
    migrate(dsn)
    return dsn


def _schema(dsn: str) -> list[tuple]:
    """Return what defines the schema: every column, constraint, index and trigger."""
    return sql(dsn, """
        SELECT 'column', table_name::text, column_name::text,
               concat_ws(' ', data_type, is_nullable, column_default)
        FROM information_schema.columns WHERE table_schema = 'public'
        UNION ALL
        SELECT 'constraint', conrelid::regclass::text, conname::text,
               pg_get_constraintdef(oid) || CASE WHEN convalidated THEN '' ELSE ' NOT VALID' END
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
        UNION ALL
        SELECT 'index', tablename::text, indexname::text, indexdef
               || (SELECT CASE WHEN indisvalid THEN '' ELSE ' INVALID' END FROM pg_index
                   WHERE indexrelid = format('%I', indexname)::regclass)
        FROM pg_indexes WHERE schemaname = 'public'
        UNION ALL
        SELECT 'trigger', tgrelid::regclass::text, tgname::text, pg_get_triggerdef(oid)
        FROM pg_trigger WHERE NOT tgisinternal
        ORDER BY 1, 2, 3""")


def test_everything_of_the_release_before_lands_in_the_default_tenant(
        database_url, template_copies, server_dsn):
    for table in TENANT_OWNED:
        by_tenant = sql(database_url, f"SELECT tenant_id, count(*) FROM {table} GROUP BY 1")
        assert by_tenant and {tenant for tenant, _ in by_tenant} == {DEFAULT_TENANT_ID}, table
    # The old tokens stay platform-wide (a call naming no tenant means `default`), and the
    # idempotency keys they sent stay theirs.
    assert sql(database_url, "SELECT name, tenant_id FROM api_tokens") == [("ops", None)]
    assert sql(database_url, "SELECT tenant_id FROM replay_requests") == [
        (idempotency.PLATFORM_KEYS,)]
    assert sql(database_url, "SELECT uid FROM tenants") == [(DEFAULT_TENANT_UID,)]

    fresh = template_copies.take()
    try:
        assert _schema(database_url) == _schema(dsn_for(server_dsn, fresh))
    finally:
        template_copies.drop(fresh)


def test_old_clients_messages_and_tokens_work_on_the_upgraded_database(
        pool, receiver, start_worker, topic, producers):
    settings = Settings.load({}, {"database_url": pool.dsn})
    app = create_app(settings, pool=pool, telemetry=Telemetry(role="web"))
    old = Api(app.test_client(), OLD_TOKEN)

    configs = old.data("{ configs { edges { node { id tenant { uid } } } } }")["configs"]
    assert sorted((edge["node"]["id"], edge["node"]["tenant"]["uid"])
                  for edge in configs["edges"]) == [("ledger", "default"), ("shop", "default")]
    succeeded = old.data('{ delivery(id: "2") { status eventId payload tenant { uid }'
                         ' attempts { attemptNumber statusCode } } }')["delivery"]
    assert succeeded == {"status": "SUCCEEDED", "eventId": "evt-succeeded", "payload": {"n": 2},
                         "tenant": {"uid": "default"},
                         "attempts": [{"attemptNumber": 1, "statusCode": 503},
                                      {"attemptNumber": 2, "statusCode": 200}]}

    publish = ("mutation($id: String!) { publishEvent(input: {type: \"order.paid\", id: $id,"
               " payload: {n: 4}}) { eventId deliveryIds duplicate } }")
    again = old.data(publish, {"id": "evt-succeeded"})["publishEvent"]
    assert again == {"eventId": "evt-succeeded", "deliveryIds": [str(SUCCEEDED)],
                     "duplicate": True}  # the old event is the default tenant's
    published = old.data(publish, {"id": "evt-after-the-upgrade"})["publishEvent"]
    assert not published["duplicate"] and len(published["deliveryIds"]) == 1

    # A replay repeated across the upgrade with its key gets its first result and runs no more.
    replay = ('mutation { replayDelivery(id: "3") { deliveryId action replayGeneration'
              ' nextAttemptAt } }')
    repeated = old.data(replay, headers={"Idempotency-Key": OLD_KEY})["replayDelivery"]
    assert (repeated["action"], repeated["replayGeneration"]) == ("REPLAYED", 1)
    expedited = old.data(replay, headers={"Idempotency-Key": "after-the-upgrade"})
    assert expedited["replayDelivery"]["action"] == "EXPEDITED"

    producer = producers("kafka-python")
    producer.send(topic.name, {"type": "order.paid", "id": "evt-from-kafka",
                               "payload": {"n": 5}})
    producer.flush()
    start_worker(**consumer_settings(topic))
    requests = receiver.wait_for(4, timeout=PATIENCE)
    assert sorted(json.loads(request.body)["id"] for request in requests) == [
        "evt-after-the-upgrade", "evt-from-kafka", "evt-pending", "evt-replayed"]
    wait_until(lambda: sql(pool.dsn, "SELECT count(*) FROM deliveries"
                                     " WHERE status <> 'succeeded'")[0][0] == 0)
    assert sql(pool.dsn, "SELECT DISTINCT tenant_id FROM deliveries UNION"
                         " SELECT DISTINCT tenant_id FROM delivery_attempts UNION"
                         " SELECT DISTINCT tenant_id FROM events") == [(DEFAULT_TENANT_ID,)]

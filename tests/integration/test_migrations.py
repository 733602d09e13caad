import os
import re
import subprocess
import sys

import gevent
import psycopg2
import pytest

from db import migrate as migrate_module
from db.adhoc import sql
from db.errors import DatabaseUnavailable
from db.migrate import Migration, migrate, migrations
from db.vocabulary import Status
from tests.former_model import FORMER_SCHEMA
from tests.helpers import PATIENCE, wait_until

TABLES = {
    "configs", "events", "deliveries", "delivery_attempts", "replay_requests",
    "rejected_events", "api_tokens", "schema_migrations",
}


def _query(dsn, sql, params=None):
    conn = psycopg2.connect(dsn)
    try:
        with conn, conn.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []
    finally:
        conn.close()


def test_migrations_are_numbered_without_gaps():
    versions = [m.version for m in migrations()]
    assert versions == list(range(1, len(versions) + 1))


def test_all_migrations_apply_to_an_empty_database(empty_database_url):
    applied = migrate(empty_database_url)
    assert [m.version for m in applied] == [m.version for m in migrations()]
    tables = {row[0] for row in _query(
        empty_database_url,
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
    )}
    assert tables >= TABLES
    indexes = {row[0] for row in _query(
        empty_database_url, "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
    )}
    assert {"deliveries_due", "deliveries_claimed", "deliveries_event_config_key",
            "deliveries_succeeded_age", "deliveries_finished_age",
            "delivery_attempts_by_delivery"} <= indexes
    (due_index,) = _query(
        empty_database_url,
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'deliveries_due'",
    )[0]
    assert "WHERE (status = 'pending'::text)" in due_index
    applied = {row[0] for row in _query(empty_database_url,
                                        "SELECT version FROM schema_migrations")}
    assert applied == {m.version for m in migrations()}


def test_migrate_twice_applies_nothing_the_second_time(empty_database_url):
    migrate(empty_database_url)
    assert migrate(empty_database_url) == []


def test_delivery_pair_is_unique(database_url):
    _query(database_url, "INSERT INTO configs (tenant_id, id, endpoint, secret, event_types) "
                         "VALUES (1, 'c', 'http://x', 's', '{a}')")
    _query(database_url, "INSERT INTO events (tenant_id, id, type, payload, occurred_at,"
                         " source) VALUES (1, 'e', 'a', '{}', now(), 'api')")
    insert = ("INSERT INTO deliveries (tenant_id, event_id, config_id, event_type,"
              " next_attempt_at) VALUES (1, 'e', 'c', 'a', now())")
    _query(database_url, insert)
    with pytest.raises(psycopg2.errors.UniqueViolation):
        _query(database_url, insert)


def test_concurrent_cli_migrations_both_succeed(empty_database_url):
    env = {**os.environ, "DATABASE_URL": empty_database_url}
    command = [sys.executable, "-m", "service", "migrate"]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(3)]
    results = [(*run.communicate(timeout=PATIENCE), run.returncode) for run in runs]
    assert [code for _, _, code in results] == [0, 0, 0], results
    applied = _query(empty_database_url, "SELECT count(*) FROM schema_migrations")[0][0]
    assert applied == len(migrations())


def test_former_model_configs_survive_the_upgrade(empty_database_url):
    former = [
        *FORMER_SCHEMA,
        "INSERT INTO configs VALUES ('cfg-1', 'https://a.example/hook', 'c2VjcmV0',"
        " '{order.created,order.paid}', true, 'shop', '2024-01-01', '2024-01-02')",
        "INSERT INTO configs VALUES ('cfg-2', 'https://b.example/hook', 'b3RoZXI=',"
        " '{refund.created}', false, NULL, '2024-01-03', '2024-01-03')",
    ]
    for statement in former:
        _query(empty_database_url, statement)
    migrate(empty_database_url)
    rows = _query(
        empty_database_url,
        "SELECT id, endpoint, secret, event_types, active, name FROM configs ORDER BY id",
    )
    assert rows == [
        ("cfg-1", "https://a.example/hook", "c2VjcmV0", ["order.created", "order.paid"],
         True, "shop"),
        ("cfg-2", "https://b.example/hook", "b3RoZXI=", ["refund.created"], False, None),
    ]
    assert _query(empty_database_url, "SELECT count(*) FROM attempts")[0][0] == 0


def test_an_unexpired_previous_secret_survives_the_move_to_a_list(empty_database_url):
    (previous_secrets,) = [m for m in migrations() if m.name == "previous_secrets"]
    for migration in migrations()[:previous_secrets.version - 1]:
        _query(empty_database_url, migration.sql())
    _query(empty_database_url,
           "INSERT INTO configs (id, endpoint, secret, event_types, previous_secret,"
           " previous_secret_expires_at) VALUES"
           " ('in-grace', 'http://x', 'new', '{a}', 'old', now() + interval '1 hour'),"
           " ('expired', 'http://x', 'new', '{a}', 'old', now() - interval '1 second'),"
           " ('never-rotated', 'http://x', 'new', '{a}', NULL, NULL)")
    (expires_at,) = _query(empty_database_url, "SELECT previous_secret_expires_at FROM configs"
                                               " WHERE id = 'in-grace'")[0]
    _query(empty_database_url, previous_secrets.sql())
    rows = _query(
        empty_database_url,
        "SELECT id, secret, ARRAY(SELECT entry ->> 'secret'"
        "  FROM jsonb_array_elements(previous_secrets) AS entry),"
        " (previous_secrets -> 0 ->> 'expires_at')::timestamptz FROM configs ORDER BY id",
    )
    assert rows == [
        ("expired", "new", [], None),
        ("in-grace", "new", ["old"], expires_at),
        ("never-rotated", "new", [], None),
    ]
    columns = {row[0] for row in _query(
        empty_database_url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'configs'",
    )}
    assert "previous_secrets" in columns
    # Kept for the processes of the release before, which run while `release` migrates.
    assert {"previous_secret", "previous_secret_expires_at"} <= columns


def _with_extra_migration(monkeypatch, tmp_path):
    """Add a migration that alters `configs` after the real ones; fast lock timeouts."""
    extra = tmp_path / "0999_touch_configs.sql"
    extra.write_text("ALTER TABLE configs ADD COLUMN touched integer;\n")
    real = migrations()
    monkeypatch.setattr(migrate_module, "migrations",
                        lambda *_: [*real, Migration(999, "touch_configs", extra)])
    monkeypatch.setattr(migrate_module, "LOCK_TIMEOUT", "100ms")


def test_a_migration_gives_way_to_a_busy_table_and_tries_again(empty_database_url,
                                                                monkeypatch, tmp_path):
    migrate(empty_database_url)
    _with_extra_migration(monkeypatch, tmp_path)
    reader = psycopg2.connect(empty_database_url)
    reader.cursor().execute("SELECT count(*) FROM configs")  # a long reader: its lock stays
    released = gevent.spawn_later(0.8, reader.rollback)
    lines = []
    try:
        applied = migrate(empty_database_url, report=lines.append)
    finally:
        released.join(5)
        reader.close()
    assert [m.version for m in applied] == [999]
    assert any("a table is busy" in line and "trying again (1/" in line for line in lines)
    assert _query(empty_database_url, "SELECT max(version) FROM schema_migrations") == [(999,)]


def test_a_migration_gives_up_on_a_table_that_stays_busy(empty_database_url, monkeypatch,
                                                          tmp_path):
    migrate(empty_database_url)
    _with_extra_migration(monkeypatch, tmp_path)
    monkeypatch.setattr(migrate_module, "LOCK_TRIES", 2)
    reader = psycopg2.connect(empty_database_url)
    reader.cursor().execute("SELECT count(*) FROM configs")
    try:
        with pytest.raises(DatabaseUnavailable, match="stayed locked through 2 tries"):
            migrate(empty_database_url)
    finally:
        reader.close()
    assert _query(empty_database_url, "SELECT max(version) FROM schema_migrations") != [(999,)]
    migrate(empty_database_url)  # once the reader is gone, it goes through
    assert _query(empty_database_url, "SELECT max(version) FROM schema_migrations") == [(999,)]


def test_the_listing_indexes_replace_the_former_ones(database_url):
    indexes = {row[0] for row in _query(
        database_url, "SELECT indexname FROM pg_indexes WHERE tablename = 'deliveries'")}
    assert {"deliveries_by_created", "deliveries_by_config_created",
            "deliveries_by_status_created", "deliveries_by_event_type_created"} <= indexes
    assert not {"deliveries_by_config", "deliveries_by_status", "deliveries_by_event_type",
                "deliveries_created"} & indexes


def test_deliveries_are_vacuumed_and_analysed_well_before_the_defaults(database_url):
    options = dict(_query(database_url, "SELECT relname, reloptions FROM pg_class"
                                        " WHERE relname IN ('deliveries', 'delivery_attempts')"))
    assert "autovacuum_analyze_scale_factor=0.01" in options["deliveries"]
    assert "autovacuum_vacuum_scale_factor=0.02" in options["deliveries"]
    assert "autovacuum_vacuum_insert_scale_factor=0.05" in options["delivery_attempts"]


def test_deliveries_stored_before_webhook_ids_get_keys_only_from_then_on(empty_database_url):
    (webhook_ids,) = [m for m in migrations()
                      if m.name == "webhook_ids_and_interrupted_attempts"]
    for migration in migrations()[:webhook_ids.version - 1]:
        _query(empty_database_url, migration.sql())
    _query(empty_database_url,
           "INSERT INTO configs (id, endpoint, secret, event_types) VALUES"
           " ('c', 'http://x', 's', '{a}');"
           " INSERT INTO events (id, type, payload, occurred_at, source) VALUES"
           " ('old', 'a', '{}', now(), 'api'),"
           " ('new', 'a', '{}', now(), 'api');"
           " INSERT INTO deliveries (event_id, config_id, event_type, next_attempt_at)"
           " VALUES ('old', 'c', 'a', now());"
           " INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation,"
           "  endpoint, outcome, duration_ms) SELECT id, 1, 0, 'http://x', 'timeout', 1"
           "  FROM deliveries")
    _query(empty_database_url, webhook_ids.sql())
    _query(empty_database_url,
           "INSERT INTO deliveries (event_id, config_id, event_type, next_attempt_at)"
           " VALUES ('new', 'c', 'a', now());"
           " INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation,"
           "  endpoint, outcome, duration_ms) SELECT id, 2, 0, 'http://x', 'interrupted', 1"
           "  FROM deliveries WHERE event_id = 'old'")
    rows = dict(_query(empty_database_url, "SELECT event_id, webhook_id FROM deliveries"))
    assert rows["old"] is None  # given its key when next claimed
    assert re.fullmatch(r"msg_[0-9a-f]{44}", rows["new"])
    assert _query(empty_database_url, "SELECT outcome FROM delivery_attempts ORDER BY id") == \
        [("timeout",), ("interrupted",)]
    with pytest.raises(psycopg2.errors.CheckViolation):
        _query(empty_database_url,
               "INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation,"
               " endpoint, outcome, duration_ms) SELECT id, 3, 0, 'http://x', 'bogus', 1"
               " FROM deliveries WHERE event_id = 'old'")


def test_the_status_column_holds_exactly_the_status_type(database_url):
    checks = [definition for (definition,) in _query(
        database_url, "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                      "WHERE conrelid = 'deliveries'::regclass AND contype = 'c'")
        if "status = ANY" in definition]
    assert len(checks) == 1
    assert re.findall(r"'(\w+)'::text", checks[0]) == [status.value for status in Status]


def test_a_migration_behind_an_autovacuum_waits_long_enough_to_have_it_cancelled(
        own_postgres, monkeypatch, tmp_path):
    # An autovacuum holds a lock that conflicts with any schema change, and PostgreSQL cancels
    # it only for a lock waited for longer than the deadlock timeout (1 s): here it would run
    # for minutes (its cost limit of 1 makes it rest after every page).
    dsn = own_postgres.dsn
    sql(dsn, "ALTER SYSTEM SET autovacuum_naptime = '1s'", autocommit=True)
    sql(dsn, "SELECT pg_reload_conf()")
    sql(dsn, "CREATE TABLE vacuumed (n integer) WITH (autovacuum_vacuum_threshold = 0,"
             " autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_cost_limit = 1,"
             " autovacuum_vacuum_cost_delay = 100);"
             " INSERT INTO vacuumed SELECT generate_series(1, 100000); DELETE FROM vacuumed")
    wait_until(lambda: sql(dsn, "SELECT count(*) FROM pg_stat_activity WHERE backend_type ="
                                " 'autovacuum worker' AND query LIKE '%vacuumed%'")[0][0])
    extra = tmp_path / "0999_touch_vacuumed.sql"
    extra.write_text("ALTER TABLE vacuumed ADD COLUMN touched integer;\n")
    real = migrations()
    monkeypatch.setattr(migrate_module, "migrations",
                        lambda *_: [*real, Migration(999, "touch_vacuumed", extra)])
    lines = []
    assert [m.version for m in migrate(dsn, report=lines.append)] == [999]
    assert any("an autovacuum runs: the next try waits 1200ms" in line for line in lines), lines
    assert len(lines) == 2, lines  # the first try gave way, the second had the autovacuum go

import argparse
import dataclasses

import pytest

from db.pool import Pooler
from service.commands.setting_flags import add_arguments, flags_from
from service.runtime.settings import Settings, SettingsError, flag_name


def test_defaults_match_the_spec():
    s = Settings.load({})
    assert s.database_url is None
    assert s.port == 8000
    assert s.retry_period == 3
    assert s.dispatch_concurrency == 50
    assert (s.min_backoff, s.max_backoff) == (60, 3600)
    assert (s.max_attempts, s.retry_window) == (15, 36000)
    assert s.retry_after_cap == 6 * 3600
    assert s.http_timeout == 30
    assert s.claim_timeout == 300
    assert s.retention_period == 3600
    assert (s.retention_succeeded, s.retention_failed) == (30 * 86400, 90 * 86400)
    assert s.secret_rotation_grace == 24 * 3600
    assert s.shutdown_timeout == 25
    assert s.max_payload == 1024 * 1024
    assert s.allow_private_endpoints is False
    assert (s.backoff_strategy, s.jitter) == ("exponential", "none")
    assert s.metrics_port == 9464
    assert s.log_level == "info"
    assert s.kafka_bootstrap_servers is None
    assert s.kafka_topics == ("webhooks",)
    assert s.kafka_group_id == "webhooks"


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings.load({}).port = 1


def test_environment_is_read():
    s = Settings.load({"WEBHOOKS_MIN_BACKOFF": "250ms", "PORT": "9000",
                       "KAFKA_TOPICS": "a, b,,c", "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "yes"})
    assert s.min_backoff == 0.25
    assert s.port == 9000
    assert s.kafka_topics == ("a", "b", "c")
    assert s.allow_private_endpoints is True


def test_flags_win_over_environment():
    s = Settings.load({"WEBHOOKS_MIN_BACKOFF": "2s"}, {"min_backoff": "5s"})
    assert s.min_backoff == 5


def test_dev_allows_private_endpoints_unless_told_otherwise():
    assert Settings.load({}, dev=True).allow_private_endpoints is True
    env = {"WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "false"}
    assert Settings.load(env, dev=True).allow_private_endpoints is False


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WEBHOOKS_MIN_BACKOFF": "soon"}, "WEBHOOKS_MIN_BACKOFF"),
        ({"PORT": "http"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"WEBHOOKS_DISPATCH_CONCURRENCY": "0"}, "WEBHOOKS_DISPATCH_CONCURRENCY"),
        ({"WEBHOOKS_JITTER": "lots"}, "WEBHOOKS_JITTER"),
        ({"WEBHOOKS_BACKOFF_STRATEGY": "random"}, "WEBHOOKS_BACKOFF_STRATEGY"),
        ({"WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "maybe"}, "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS"),
        ({"WEBHOOKS_MAX_PAYLOAD": "huge"}, "WEBHOOKS_MAX_PAYLOAD"),
        ({"WEBHOOKS_MIN_BACKOFF": "2h"}, "WEBHOOKS_MAX_BACKOFF"),
        ({"WEBHOOKS_MIN_BACKOFF": "0"}, "WEBHOOKS_MIN_BACKOFF"),
        ({"WEBHOOKS_CLAIM_TIMEOUT": "10s"}, "WEBHOOKS_CLAIM_TIMEOUT"),
        ({"WEBHOOKS_RETRY_PERIOD": "0"}, "WEBHOOKS_RETRY_PERIOD"),
        ({"WEBHOOKS_LOG_LEVEL": "loud"}, "WEBHOOKS_LOG_LEVEL"),
        ({"WEBHOOKS_RETRYABLE_STATUS_CODES": "2xx"}, "WEBHOOKS_RETRYABLE_STATUS_CODES: '2xx'"),
        ({"WEBHOOKS_RETRYABLE_STATUS_CODES": "5xx,700"}, "WEBHOOKS_RETRYABLE_STATUS_CODES"),
        ({"WEBHOOKS_STARTUP_TIMEOUT": "soon"}, "WEBHOOKS_STARTUP_TIMEOUT"),
        ({"WEBHOOKS_QUEUE_METRICS_PERIOD": "0"}, "WEBHOOKS_QUEUE_METRICS_PERIOD"),
    ],
)
def test_bad_values_name_the_setting(env, message):
    with pytest.raises(SettingsError, match=message):
        Settings.load(env)


def test_a_claim_timeout_must_outlast_a_claim_waiting_behind_its_configs_sends():
    """Two rounds of the config's sends ahead, its own, and the record: 3 x 6s + 2s."""
    with pytest.raises(SettingsError, match=r"WEBHOOKS_CLAIM_TIMEOUT: must be longer than 20s"):
        Settings.load({"WEBHOOKS_HTTP_TIMEOUT": "6s", "WEBHOOKS_CLAIM_TIMEOUT": "8s"})
    assert Settings.load({"WEBHOOKS_HTTP_TIMEOUT": "6s",
                          "WEBHOOKS_CLAIM_TIMEOUT": "21s"}).claim_timeout == 21


def test_the_pooler_setting_reads_its_three_words():
    assert Settings.load({}).database_pooler is Pooler.AUTO
    assert Settings.load({"WEBHOOKS_DATABASE_POOLER": "Transaction"}).database_pooler is (
        Pooler.TRANSACTION)
    with pytest.raises(SettingsError, match="WEBHOOKS_DATABASE_POOLER: invalid value 'session'"):
        Settings.load({"WEBHOOKS_DATABASE_POOLER": "session"})


def test_what_needs_a_session_uses_the_direct_url_when_there_is_one():
    pooled = "postgresql://u@pooler:6432/db"
    direct = "postgresql://u@db:5432/db"
    alone = Settings.load({"DATABASE_URL": pooled, "WEBHOOKS_DATABASE_POOLER": "transaction"})
    assert (alone.session_database_url, alone.session_pooler) == (pooled, Pooler.TRANSACTION)
    both = alone.replace(database_direct_url=direct)
    assert (both.session_database_url, both.session_pooler) == (direct, Pooler.AUTO)


def test_bad_flag_names_the_flag():
    with pytest.raises(SettingsError, match="--min-backoff"):
        Settings.load({}, {"min_backoff": "later"})


def test_every_setting_has_a_flag_named_after_its_variable():
    assert flag_name("WEBHOOKS_MIN_BACKOFF") == "min-backoff"
    assert flag_name("DATABASE_URL") == "database-url"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for spec in dataclasses.fields(Settings):
        flag = "--" + flag_name(spec.metadata["env"])
        args = parser.parse_args([flag, "1"])
        assert getattr(args, spec.name) == "1"


@pytest.mark.parametrize(
    ("argv", "name", "value"),
    [
        (["--retry-period", "5s"], "retry_period", 5),
        (["--retry-batch-size", "20"], "retry_batch_size", 20),
        (["--min-backoff-delay", "2m"], "min_backoff", 120),
        (["--max-backoff-delay", "2h"], "max_backoff", 7200),
        (["--abort-after", "30d"], "retry_window", 30 * 86400),
    ],
)
def test_flags_of_the_former_retry_worker_are_aliases(argv, name, value):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    settings = Settings.load({}, flags_from(parser.parse_args(argv)))
    assert getattr(settings, name) == value


def test_every_default_parses_and_states_its_unit_once():
    for spec in dataclasses.fields(Settings):
        default = spec.metadata["default"]
        if default is not None:
            assert spec.default == spec.metadata["parse"](default)


def test_database_url_is_required_where_needed():
    with pytest.raises(SettingsError, match="DATABASE_URL"):
        Settings.load({}).require_database_url()
    assert Settings.load({"DATABASE_URL": "postgresql://x"}).require_database_url()


def test_kafka_consumer_settings():
    s = Settings.load({})
    assert (s.kafka_batch_size, s.kafka_session_timeout) == (500, 6)
    s = Settings.load({"KAFKA_BOOTSTRAP_SERVERS": "a:9092,b:9092", "KAFKA_GROUP_ID": "g",
                       "WEBHOOKS_KAFKA_BATCH_SIZE": "50",
                       "WEBHOOKS_KAFKA_SESSION_TIMEOUT": "2500ms"})
    assert s.kafka_bootstrap_servers == "a:9092,b:9092"
    assert (s.kafka_group_id, s.kafka_batch_size, s.kafka_session_timeout) == ("g", 50, 2.5)
    assert Settings.load({}, {"kafka_batch_size": "7"}).kafka_batch_size == 7


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WEBHOOKS_KAFKA_BATCH_SIZE": "0"}, "WEBHOOKS_KAFKA_BATCH_SIZE"),
        ({"WEBHOOKS_KAFKA_BATCH_SIZE": "many"}, "WEBHOOKS_KAFKA_BATCH_SIZE"),
        ({"WEBHOOKS_KAFKA_SESSION_TIMEOUT": "500ms"}, "WEBHOOKS_KAFKA_SESSION_TIMEOUT"),
        ({"WEBHOOKS_KAFKA_SESSION_TIMEOUT": "soon"}, "WEBHOOKS_KAFKA_SESSION_TIMEOUT"),
        ({"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "KAFKA_TOPICS": " , "}, "KAFKA_TOPICS"),
        ({"KAFKA_TOPICS": "orders,bad topic"}, "KAFKA_TOPICS: 'bad topic'"),
        ({"KAFKA_TOPICS": "t" * 250}, "KAFKA_TOPICS"),
    ],
)
def test_bad_kafka_values_name_the_setting(env, message):
    with pytest.raises(SettingsError, match=message):
        Settings.load(env)


def test_retryable_status_codes_default_to_408_429_and_5xx():
    assert Settings.load({}).retryable_status_codes == frozenset({408, 429, *range(500, 600)})


@pytest.mark.parametrize(
    ("text", "codes"),
    [("409, 503", {409, 503}), ("4xx", set(range(400, 500))), ("", set())],
)
def test_retryable_status_codes_are_read_from_the_environment_and_flags(text, codes):
    env = {"WEBHOOKS_RETRYABLE_STATUS_CODES": text}
    assert Settings.load(env).retryable_status_codes == frozenset(codes)
    flags = {"retryable_status_codes": text}
    assert Settings.load({}, flags).retryable_status_codes == frozenset(codes)


def test_startup_timeout_bounds_the_wait_for_the_database():
    assert Settings.load({}).startup_timeout == 60
    assert Settings.load({"WEBHOOKS_STARTUP_TIMEOUT": "0"}).startup_timeout == 0
    assert Settings.load({"WEBHOOKS_STARTUP_TIMEOUT": "5m"}).startup_timeout == 300

"""LISTEN/NOTIFY through db/: the statements that make deliveries due wake a listener, and
every change that stops or changes a config's sends names the config.

A wait returns as soon as a notification arrives, so waits for one are long (a busy machine
may take a while); waits that must hear nothing are short, after a notification that was
sent later has been heard (so nothing earlier is still on its way).
"""

import time

import pytest

from db import configs, deliveries, health
from db.errors import DatabaseUnavailable
from db.notifications import Heard, Listener
from db.scope import PLATFORM
from tests.helpers import PATIENCE


@pytest.fixture
def listener(database_url):
    listener = Listener(database_url)
    yield listener
    listener.close()


def test_a_quiet_wait_pings_and_hears_nothing(listener):
    assert not listener.wait(0.1)
    assert not listener.wait(0.1)


def test_new_and_replayed_deliveries_wake_the_listener_once_each(listener, make, pool):
    config = make.config()
    delivery_id = make.delivery(config)
    assert listener.wait(PATIENCE).due
    assert not listener.wait(0.1)  # heard once, then forgotten
    make.set(delivery_id, status="failed", next_attempt_at=None)
    with pool.transaction() as cursor:
        deliveries.replay(cursor, PLATFORM, delivery_id)
    assert listener.wait(PATIENCE).due


def test_a_pause_names_the_config_and_a_resume_wakes_the_listener(listener, make, pool):
    config = make.config()
    health.pause(pool, PLATFORM, config.id, reason="test")
    heard = listener.wait(PATIENCE)
    assert heard.changed == {config.id} and not heard.due
    health.resume(pool, PLATFORM, config.id, reason="test")
    heard = listener.wait(PATIENCE)
    assert heard.due and not heard.changed  # a resume stops nothing


@pytest.mark.parametrize("change", ["deactivate", "delete", "endpoint", "rotate", "revoke"])
def test_a_change_that_stops_or_alters_a_configs_sends_names_the_config(
        change, listener, make, pool):
    config = make.config()
    other = make.config()
    {
        "deactivate": lambda: configs.deactivate(pool, PLATFORM, config.id),
        "delete": lambda: configs.delete(pool, PLATFORM, config.id),
        "endpoint": lambda: configs.update(pool, PLATFORM, config.id, endpoint="https://example.net/b"),
        "rotate": lambda: configs.rotate_secret(pool, PLATFORM, config.id, grace_seconds=3600),
        "revoke": lambda: configs.rotate_secret(pool, PLATFORM, config.id, grace_seconds=0),
    }[change]()
    heard = listener.wait(PATIENCE)
    assert heard.changed == {config.id}, change
    assert other.id not in heard.changed


def test_changes_that_leave_the_sends_alone_name_no_config(listener, make, pool):
    config, marker = make.config(), make.config()
    configs.update(pool, PLATFORM, config.id, name="renamed", event_types=["other.type"],
                   max_in_flight=3, rate_per_second=5.0)
    configs.deactivate(pool, PLATFORM, marker.id)
    # Heard in commit order: had the update named its config, that would come first.
    assert listener.wait(PATIENCE).changed == {marker.id}
    configs.deactivate(pool, PLATFORM, config.id)
    configs.activate(pool, PLATFORM, config.id)
    health.pause(pool, PLATFORM, config.id, reason="test")
    health.pause(pool, PLATFORM, config.id, reason="again")  # already paused: no change
    configs.deactivate(pool, PLATFORM, config.id)  # already inactive: no change
    health.pause(pool, PLATFORM, marker.id, reason="marker")
    heard = set()
    while marker.id not in heard:
        heard |= listener.wait(PATIENCE).changed
    assert heard == {config.id, marker.id}  # the deactivation and the first pause


def test_an_opening_circuit_names_its_config_once(listener, make, pool):
    from tests.endpoint_health import RULES, events_for, open_circuit
    config = make.config()
    events_for(make, config, RULES.failures_to_open + 1)
    open_circuit(make, config)
    heard = Heard()
    while not heard.changed:  # the events and the failures also make deliveries due
        heard = listener.wait(PATIENCE)
        assert heard, "nothing heard"
    assert heard.changed == {config.id}
    assert not listener.wait(0.2).changed


def test_a_lost_connection_is_the_services_own_error(listener, pool):
    with pool.transaction() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE application_name = 'webhooks-listen' "
                       "AND datname = current_database()")
    deadline = time.monotonic() + PATIENCE  # the server ends the backend when it gets to it
    with pytest.raises(DatabaseUnavailable):
        while time.monotonic() < deadline:  # a wait may only read the server's goodbye
            listener.wait(1)

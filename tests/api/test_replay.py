"""replayDelivery: eligibility, the Idempotency-Key and its 24 h memory, races."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import gevent
import pytest

from db import configs, idempotency
from db.errors import NotEligible
from db.scope import PLATFORM
from tests.api.conftest import metric_value
from tests.helpers import PATIENCE, wait_until

REPLAY = """mutation ($id: ID!) {
  replayDelivery(id: $id) { deliveryId action replayGeneration nextAttemptAt } }"""
LATER = datetime.now(UTC) + timedelta(hours=2)


def replay(api, delivery_id, key="key-1"):
    return api.data(REPLAY, {"id": str(delivery_id)},
                    headers={"Idempotency-Key": key})["replayDelivery"]


def failed(make, config=None, **columns):
    return make.delivery(config, **{"status": "failed", "next_attempt_at": None,
                                    "attempt_count": 15, "last_status_code": 500,
                                    "generation_started_at": datetime.now(UTC)
                                    - timedelta(hours=11), **columns})


def test_a_failed_delivery_gets_a_new_generation_due_now(api, make, telemetry):
    delivery_id = failed(make)
    result = replay(api, delivery_id)
    assert result["deliveryId"] == str(delivery_id)
    assert result["action"] == "REPLAYED"
    assert result["replayGeneration"] == 1
    assert datetime.fromisoformat(result["nextAttemptAt"]) <= datetime.now(UTC)
    row = make.row(delivery_id)
    assert row["status"] == "pending"
    assert (row["replay_generation"], row["attempt_count"]) == (1, 0)
    assert row["generation_started_at"] is None
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 1
    assert metric_value(telemetry, "webhooks_delivery_transitions_total",
                        **{"from": "failed", "to": "pending"}) == 1


def test_a_pending_delivery_is_expedited_with_its_budget_unchanged(api, make, telemetry):
    started = datetime.now(UTC) - timedelta(hours=1)
    delivery_id = make.delivery(next_attempt_at=LATER, attempt_count=4,
                                generation_started_at=started)
    result = replay(api, delivery_id)
    assert (result["action"], result["replayGeneration"]) == ("EXPEDITED", 0)
    row = make.row(delivery_id)
    assert row["status"] == "pending" and row["next_attempt_at"] <= datetime.now(UTC)
    assert (row["attempt_count"], row["generation_started_at"]) == (4, started)
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="expedited") == 1


@pytest.mark.parametrize("status", ["succeeded", "cancelled"])
def test_terminal_deliveries_other_than_failed_are_not_eligible(api, make, status):
    delivery_id = make.delivery(status=status, next_attempt_at=None)
    error = api.error(REPLAY, {"id": delivery_id}, headers={"Idempotency-Key": "k"})
    assert error["extensions"]["code"] == "NOT_ELIGIBLE"
    assert error["message"] == (f"delivery {delivery_id}: it is {status}; only failed and "
                                "pending deliveries can be replayed")  # as a bulk replay says
    assert make.row(delivery_id)["status"] == status


def test_a_delivery_in_flight_is_not_eligible(api, make):
    delivery_id = make.delivery(status="delivering", claimed_at=datetime.now(UTC),
                                claim_token="00000000-0000-0000-0000-000000000001")
    assert api.code(REPLAY, {"id": delivery_id}, headers={"Idempotency-Key": "k"}) == \
        "NOT_ELIGIBLE"
    assert make.row(delivery_id)["status"] == "delivering"


@pytest.mark.parametrize("change", [configs.deactivate, configs.delete])
def test_a_delivery_of_an_inactive_or_deleted_config_is_not_eligible(api, make, change):
    config = make.config()
    delivery_id = failed(make, config)
    change(make.pool, PLATFORM, config.id)
    error = api.error(REPLAY, {"id": delivery_id}, headers={"Idempotency-Key": "k"})
    assert error["extensions"]["code"] == "NOT_ELIGIBLE"
    assert error["message"] == f"delivery {delivery_id}: its config is inactive or deleted"
    assert make.row(delivery_id)["status"] == "failed"


def test_an_unknown_delivery_is_not_found(shared_api):
    assert shared_api.code(REPLAY, {"id": "424242"},
                           headers={"Idempotency-Key": "k"}) == "NOT_FOUND"


@pytest.mark.parametrize(("id", "says"), [("abc", "is not a delivery id"),
                                          ("-3", "is not a delivery id"),
                                          ("99999999999999999999999", "is out of range"),
                                          ("9223372036854775808", "is out of range"),
                                          ("0", "is out of range")])
def test_an_id_that_cannot_name_a_delivery_is_bad_input(shared_api, id, says):
    error = shared_api.error(REPLAY, {"id": id}, headers={"Idempotency-Key": "k"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert says in error["message"]


@pytest.mark.parametrize("key", [None, "", "   ", "k" * 256, "caf\u00e9"])
def test_the_idempotency_key_is_required_and_bounded(shared_api, key):
    headers = {} if key is None else {"Idempotency-Key": key.encode().decode("latin-1")}
    error = shared_api.error(REPLAY, {"id": "1"}, headers=headers)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Idempotency-Key" in error["message"]


def test_without_a_key_nothing_is_replayed(api, make):
    delivery_id = failed(make)
    assert api.code(REPLAY, {"id": delivery_id}) == "BAD_USER_INPUT"
    assert make.row(delivery_id)["status"] == "failed"


def test_the_same_key_and_request_return_the_first_result_without_replaying_again(
        api, make, telemetry):
    delivery_id = failed(make)
    first = replay(api, delivery_id, key="same")
    make.set(delivery_id, status="failed", next_attempt_at=None)  # it failed again
    assert replay(api, delivery_id, key="same") == first
    assert make.row(delivery_id)["replay_generation"] == 1
    assert make.row(delivery_id)["status"] == "failed"
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 1
    assert replay(api, delivery_id, key="another")["replayGeneration"] == 2


def test_the_same_key_for_another_request_is_a_conflict(api, make):
    config = make.config()
    one, two = failed(make, config), failed(make, config)
    replay(api, one, key="shared")
    error = api.error(REPLAY, {"id": two}, headers={"Idempotency-Key": "shared"})
    assert error["extensions"]["code"] == "IDEMPOTENCY_CONFLICT"
    assert make.row(two)["status"] == "failed"


def test_a_refused_replay_does_not_use_up_its_key(api, make):
    config = make.config()
    delivery_id = failed(make, config)
    configs.deactivate(make.pool, PLATFORM, config.id)
    assert api.code(REPLAY, {"id": delivery_id}, headers={"Idempotency-Key": "k"}) == \
        "NOT_ELIGIBLE"
    configs.activate(make.pool, PLATFORM, config.id)
    assert replay(api, delivery_id, key="k")["action"] == "REPLAYED"


def test_a_key_older_than_24_hours_is_forgotten(api, make, pool):
    config = make.config()
    one, two = failed(make, config), failed(make, config)
    replay(api, one, key="old")
    with pool.transaction() as cursor:
        cursor.execute("UPDATE replay_requests SET created_at = now() - interval '25 hours'")
    assert replay(api, two, key="old")["deliveryId"] == str(two)
    make.set(one, status="failed", next_attempt_at=None)
    with pool.transaction() as cursor:
        cursor.execute("UPDATE replay_requests SET created_at = now() - interval '25 hours'")
    assert replay(api, one, key="old")["replayGeneration"] == 2
    assert make.count("SELECT count(*) FROM replay_requests") == 1


def test_expired_records_of_other_keys_are_purged(api, make, pool):
    config = make.config()
    replay(api, failed(make, config), key="a")
    with pool.transaction() as cursor:
        cursor.execute("UPDATE replay_requests SET created_at = now() - interval '2 days'")
    replay(api, failed(make, config), key="b")
    with pool.transaction() as cursor:
        cursor.execute("SELECT idempotency_key FROM replay_requests")
        assert cursor.fetchall() == [("b",)]


def test_concurrent_identical_requests_replay_once_and_agree(api, make, telemetry):
    delivery_id = failed(make)
    jobs = [gevent.spawn(replay, api, delivery_id, "race") for _ in range(8)]
    gevent.joinall(jobs, raise_error=True)
    results = [job.value for job in jobs]
    assert all(result == results[0] for result in results)
    assert results[0]["action"] == "REPLAYED"
    assert make.row(delivery_id)["replay_generation"] == 1
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 1


def test_run_once_runs_a_slow_operation_once_under_a_race(pool):
    runs = []

    def operation(cursor):
        runs.append(1)
        cursor.execute("SELECT pg_sleep(0.2)")
        return {"n": len(runs)}

    fingerprint = idempotency.fingerprint("op", {"id": 1})
    jobs = [gevent.spawn(idempotency.run_once, pool, PLATFORM, key="k", fingerprint=fingerprint,
                         operation=operation) for _ in range(4)]
    gevent.joinall(jobs, raise_error=True)
    assert len(runs) == 1
    assert sorted(job.value[1] for job in jobs) == [False, False, False, True]
    assert {job.value[0]["n"] for job in jobs} == {1}


def test_a_deactivation_racing_a_replay_leaves_nothing_pending(api, make, pool):
    for _ in range(10):
        config = make.config()
        delivery_id = failed(make, config)
        jobs = [gevent.spawn(api.post, REPLAY, {"id": delivery_id},
                             headers={"Idempotency-Key": f"r{delivery_id}"}),
                gevent.spawn(configs.deactivate, pool, PLATFORM, config.id)]
        gevent.joinall(jobs, raise_error=True)
        assert make.row(delivery_id)["status"] in ("failed", "cancelled")


@pytest.mark.parametrize("bulk", [False, True])
def test_an_expedite_waiting_on_a_deactivation_neither_deadlocks_nor_leaves_it_pending(
        make, pool, bulk):
    """Lock order: a replay takes the config before the delivery, as a deactivation does."""
    from db import deliveries
    from db.filters import DeliveryFilter
    from db.pool import connect
    from db.sql import QUERIES

    config = make.config()
    delivery_id = make.delivery(config, next_attempt_at=LATER)

    def expedite():
        with pool.transaction() as cursor:
            if bulk:
                return deliveries.replay_page(
                    cursor, PLATFORM,
                    DeliveryFilter(created_after=datetime.now(UTC) - timedelta(days=1),
                                   statuses=["pending"]),
                    before=None, limit=10)
            return deliveries.replay(cursor, PLATFORM, delivery_id)

    deactivation = connect(pool.dsn)
    try:
        with deactivation.cursor() as cursor:
            cursor.execute(QUERIES["set_config_active"],
                           {**PLATFORM.params(), "id": config.id, "active": False})
            job = gevent.spawn(expedite)
            wait_until(lambda: make.count(  # the replay now waits for the config row
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"))
            cursor.execute("SET LOCAL lock_timeout = '3s'")
            cursor.execute(QUERIES["cancel_pending_deliveries_of_config"], {"id": config.id})
            assert cursor.rowcount == 1
        deactivation.commit()
    finally:
        deactivation.close()
    job.join(PATIENCE)
    if bulk:  # the page is read once the deactivation committed: the delivery is cancelled
        assert job.value.skipped == [
            (delivery_id, "it is cancelled; only failed and pending deliveries can be replayed")]
    else:
        assert isinstance(job.exception, NotEligible)
    assert make.row(delivery_id)["status"] == "cancelled"

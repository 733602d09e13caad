"""Held is a state a person can see: a pending delivery that its config's pause or circuit,
or an earlier delivery of its key, holds back says so (and until when); a replay neither
expedites nor counts it, and the queue's age leaves it out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from db import configs, health, inspection
from db.scope import PLATFORM
from tests.api.test_bulk_replay import bulk
from tests.api.test_publish import publish
from tests.endpoint_health import RULES, events_for, open_circuit

HOLD = "heldBy { by since until reason behind }"
ONE = f'query ($id: ID!) {{ delivery(id: $id) {{ id status {HOLD} }} }}'
LISTED = f"""query ($configId: ID) {{
  deliveries(filter: {{configId: $configId}}) {{ edges {{ node {{ id {HOLD} }} }} }} }}"""
REPLAY = "mutation ($id: ID!) { replayDelivery(id: $id) { deliveryId action } }"
DRY_RUN = """mutation ($filter: DeliveryFilter!) {
  replayDeliveries(filter: $filter, dryRun: true) { wouldReplay sample { id } } }"""
HOUR_AGO = (datetime.now(UTC) - timedelta(hours=1)).isoformat()


def hold_of(api, delivery_id):
    return api.data(ONE, {"id": str(delivery_id)})["delivery"]["heldBy"]


def due_now(make, delivery_id, *, minutes_ago: int = 10) -> None:
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE deliveries SET next_attempt_at = now() - make_interval("
                       "mins => %s) WHERE id = %s", (minutes_ago, delivery_id))


def test_a_pause_holds_its_pending_deliveries_until_resumed_and_says_why(api, make):
    config = make.config()
    _, (delivery,) = make.event()
    assert hold_of(api, delivery) is None
    health.pause(make.pool, PLATFORM, config.id, reason="receiver migrating")
    hold = hold_of(api, delivery)
    assert hold["by"] == "PAUSE" and hold["reason"] == "receiver migrating"
    assert hold["since"] is not None and hold["until"] is None
    listed = api.data(LISTED, {"configId": config.id})["deliveries"]["edges"]
    assert [edge["node"]["heldBy"]["by"] for edge in listed] == ["PAUSE"]
    refused = api.error(REPLAY, {"id": str(delivery)}, headers={"Idempotency-Key": "k1"})
    assert refused["extensions"]["code"] == "NOT_ELIGIBLE"
    assert "held by its config's pause; resume the config" in refused["message"]
    health.resume(make.pool, PLATFORM, config.id, reason="done")
    assert hold_of(api, delivery) is None


def test_an_open_circuit_holds_them_until_its_next_probe(api, make):
    config = make.config()
    events_for(make, config, RULES.failures_to_open)
    open_circuit(make, config)
    _, (delivery,) = make.event()
    hold = hold_of(api, delivery)
    probe = health.of_configs(make.pool, PLATFORM, [config.id])[config.id].next_probe_at
    assert hold["by"] == "CIRCUIT" and hold["until"] == probe.isoformat()
    assert hold["reason"] and "503" in hold["reason"]
    refused = api.error(REPLAY, {"id": str(delivery)}, headers={"Idempotency-Key": "k2"})
    assert "held by its config's circuit until the next probe at" in refused["message"]


def test_a_later_delivery_of_a_key_is_held_behind_the_earlier_one(api, make):
    config = make.config(event_types=["ledger"], ordering="per_key")
    first = publish(api, type="ledger", orderingKey="acct-1")["deliveryIds"][0]
    second = publish(api, type="ledger", orderingKey="acct-1")["deliveryIds"][0]
    assert hold_of(api, first) is None
    assert hold_of(api, second) == {"by": "ORDERING_KEY", "since": None, "until": None,
                                    "reason": None, "behind": first}
    assert config.ordering == "per_key"


def test_the_bulk_dry_run_counts_only_what_a_replay_would_change(api, make):
    paused, healthy = make.config(event_types=["a"]), make.config(event_types=["b"])
    held = make.delivery(paused)
    sendable = make.delivery(healthy)
    failed_of_paused = make.delivery(paused, status="failed", next_attempt_at=None,
                                     attempt_count=15)
    health.pause(make.pool, PLATFORM, paused.id, reason="test")
    preview = api.data(DRY_RUN, {"filter": {"createdAfter": HOUR_AGO}})["replayDeliveries"]
    # The held pending one would not change; the failed one of the paused config would be
    # replayed (and then wait for the resume).
    assert preview["wouldReplay"] == 2
    assert {s["id"] for s in preview["sample"]} == {str(sendable), str(failed_of_paused)}
    result = bulk(api, "held-1", filter={"createdAfter": HOUR_AGO})
    assert result["expedited"] == [str(sendable)]
    assert result["replayed"] == [str(failed_of_paused)]
    assert [s["deliveryId"] for s in result["skipped"]] == [str(held)]
    assert "held by its config's pause" in result["skipped"][0]["reason"]


def test_the_queue_age_counts_only_deliveries_that_could_be_sent_now(make):
    config = make.config()
    _, (delivery,) = make.event()
    due_now(make, delivery, minutes_ago=30)
    assert inspection.stats(make.pool).oldest_due_age_seconds >= 29 * 60
    health.pause(make.pool, PLATFORM, config.id, reason="test")
    assert inspection.stats(make.pool).oldest_due_age_seconds is None
    health.resume(make.pool, PLATFORM, config.id, reason="done")
    assert inspection.stats(make.pool).oldest_due_age_seconds >= 29 * 60
    configs.deactivate(make.pool, PLATFORM, config.id)
    assert inspection.stats(make.pool).oldest_due_age_seconds is None


def test_a_delivery_is_found_by_the_webhook_id_its_receiver_logged(api, make):
    make.config()
    _, (wanted,) = make.event()
    make.event()
    webhook_id = make.row(wanted)["webhook_id"]
    assert webhook_id.startswith("msg_")
    found = api.data("""query ($id: String) { deliveries(filter: {webhookId: $id}) {
        edges { node { id webhookId } } } }""", {"id": webhook_id})["deliveries"]["edges"]
    assert [edge["node"] for edge in found] == [{"id": str(wanted), "webhookId": webhook_id}]


def test_a_delivery_gives_its_newest_attempts_oldest_first_bounded(api, make):
    make.config()
    _, (delivery,) = make.event()
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number,"
            " replay_generation,"
            " endpoint, outcome, status_code, duration_ms) SELECT 1, %s, n, 0, 'http://x',"
            " 'http_error', 500, n FROM generate_series(1, 12) n", (delivery,))
    query = ("query ($id: ID!, $last: Int!) { delivery(id: $id) { "
             "attempts(last: $last) { durationMs } } }")
    shown = api.data(query, {"id": str(delivery), "last": 5})["delivery"]["attempts"]
    assert [a["durationMs"] for a in shown] == [8, 9, 10, 11, 12]
    error = api.error(query, {"id": str(delivery), "last": 0})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"

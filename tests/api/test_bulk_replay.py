"""replayDeliveries: one page of a creation window at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from db import configs
from db.scope import PLATFORM
from tests.api.conftest import metric_value

BULK = """mutation ($filter: DeliveryFilter!, $first: Int, $after: String) {
  replayDeliveries(filter: $filter, first: $first, after: $after) {
    replayed expedited skipped { deliveryId reason } hasMore nextCursor } }"""
NOW = datetime.now(UTC)
DAY_AGO = (NOW - timedelta(days=1)).isoformat()


def bulk(api, key, **variables):
    variables.setdefault("filter", {"createdAtFrom": DAY_AGO})
    return api.data(BULK, variables, headers={"Idempotency-Key": key})["replayDeliveries"]


def failed(make, config, **columns):
    return make.delivery(config, status="failed", next_attempt_at=None, attempt_count=15,
                         **columns)


def test_a_page_replays_failed_expedites_pending_and_skips_the_rest(api, make, telemetry):
    config, off = make.config(), make.config(event_types=["other"])
    failed_ids = [failed(make, config) for _ in range(2)]
    pending = make.delivery(config, next_attempt_at=NOW + timedelta(hours=1))
    make.delivery(config, status="succeeded", next_attempt_at=None)
    orphan = failed(make, off)
    configs.deactivate(make.pool, PLATFORM, off.id)
    result = bulk(api, "k1")
    assert result["replayed"] == [str(i) for i in reversed(failed_ids)]
    assert result["expedited"] == [str(pending)]
    assert result["skipped"] == [{"deliveryId": str(orphan),
                                  "reason": "its config is inactive or deleted"}]
    assert (result["hasMore"], result["nextCursor"]) == (False, None)
    assert {make.row(i)["replay_generation"] for i in failed_ids} == {1}
    assert make.row(pending)["next_attempt_at"] <= datetime.now(UTC)
    assert make.row(orphan)["status"] == "failed"
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 2
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="expedited") == 1


def test_pages_walk_the_window_with_a_new_key_each(api, make):
    config = make.config()
    ids = [failed(make, config) for _ in range(5)]
    seen, after, page = [], None, 0
    while True:
        page += 1
        result = bulk(api, f"page-{page}", first=2, after=after)
        seen += result["replayed"]
        if not result["hasMore"]:
            break
        after = result["nextCursor"]
    assert page == 3
    assert seen == [str(i) for i in reversed(ids)]


def test_the_window_status_and_config_filters_apply(api, make):
    config, other = make.config(), make.config(event_types=["b"])
    old = failed(make, config)
    make.set(old, created_at=NOW - timedelta(days=3))
    recent = failed(make, config)
    elsewhere = failed(make, other)
    result = bulk(api, "f1", filter={"createdAtFrom": DAY_AGO, "configIds": [config.id]})
    assert result["replayed"] == [str(recent)]
    assert make.row(elsewhere)["status"] == "failed"
    assert make.row(old)["status"] == "failed"
    window = {"createdAtFrom": (NOW - timedelta(days=4)).isoformat(),
              "createdAtTo": (NOW - timedelta(days=2)).isoformat(), "status": ["FAILED"]}
    assert bulk(api, "f2", filter=window)["replayed"] == [str(old)]


def test_the_same_key_returns_the_same_page_without_replaying_again(api, make, telemetry):
    delivery_id = failed(make, make.config())
    first = bulk(api, "same")
    make.set(delivery_id, status="failed", next_attempt_at=None)
    assert bulk(api, "same") == first
    assert make.row(delivery_id)["replay_generation"] == 1
    assert metric_value(telemetry, "webhooks_replayed_deliveries_total",
                        action="replayed") == 1
    other = {"createdAtFrom": (NOW - timedelta(days=2)).isoformat()}
    assert api.code(BULK, {"filter": other}, headers={"Idempotency-Key": "same"}) == \
        "IDEMPOTENCY_CONFLICT"


def test_a_cursor_is_bound_to_its_filter(api, make):
    config = make.config()
    for _ in range(3):
        failed(make, config)
    after = bulk(api, "a", first=1)["nextCursor"]
    other = {"createdAtFrom": (NOW - timedelta(days=2)).isoformat()}
    error = api.error(BULK, {"filter": other, "after": after},
                      headers={"Idempotency-Key": "b"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "filter" in error["message"]
    assert api.code(BULK, {"filter": {"createdAtFrom": DAY_AGO}, "after": "junk"},
                    headers={"Idempotency-Key": "c"}) == "BAD_USER_INPUT"


@pytest.mark.parametrize(("filter", "word"), [
    ({"createdAtFrom": (NOW - timedelta(days=91)).isoformat()}, "90 days"),
    ({"createdAtFrom": DAY_AGO, "createdAtTo": DAY_AGO}, "after"),
    ({"createdAtFrom": "2024-01-01T00:00:00"}, "offset"),
    ({"createdAtFrom": "soon"}, "DateTime"),
    ({}, "createdAtFrom"),
])
def test_a_bad_window_is_bad_input(shared_api, filter, word):
    error = shared_api.error(BULK, {"filter": filter}, headers={"Idempotency-Key": "w"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert word in error["message"]


def test_a_bulk_replay_needs_a_key_and_a_page_size_within_bounds(shared_api):
    assert shared_api.code(BULK, {"filter": {"createdAtFrom": DAY_AGO}}) == "BAD_USER_INPUT"
    assert shared_api.code(BULK, {"filter": {"createdAtFrom": DAY_AGO}, "first": 1001},
                           headers={"Idempotency-Key": "x"}) == "BAD_USER_INPUT"

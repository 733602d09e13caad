"""The API the dashboard is built on: one shared filter, paging both ways, the order by next
attempt, totalCount, attemptHistory, `me`, and the dry run of a bulk replay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from db import configs, inspection
from db.filters import DeliveryFilter
from db.scope import PLATFORM

LIST = """
query ($filter: DeliveryFilter, $first: Int, $after: String, $last: Int, $before: String,
       $orderBy: DeliveryOrder! = CREATED_AT_DESC) {
  deliveries(filter: $filter, first: $first, after: $after, last: $last, before: $before,
             orderBy: $orderBy) {
    totalCount totalCountIsExact
    edges { cursor node { id configName nextAttemptAt } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
}"""
BULK = """mutation ($filter: DeliveryFilter!, $dryRun: Boolean!) {
  replayDeliveries(filter: $filter, dryRun: $dryRun) {
    replayed expedited dryRun wouldReplay wouldReplayIsExact sample { id status }
  }
}"""
HISTORY = """query ($configIds: [ID!]) {
  attemptHistory(hours: 3, bucketMinutes: 60, configIds: $configIds) {
    since bucketSeconds complete
    buckets { start attempts succeeded successRate outcomes { outcome count } }
    configs { configId configName attempts succeeded successRate }
  }
}"""
NOW = datetime.now(UTC)
HOUR_AGO = (NOW - timedelta(hours=1)).isoformat()


def listed(api, **variables):
    return api.data(LIST, variables)["deliveries"]


def ids(connection):
    return [int(edge["node"]["id"]) for edge in connection["edges"]]


def attempt(make, delivery_id, outcome, status_code, minutes_ago=0):
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number, "
            "replay_generation, "
            "endpoint, outcome, status_code, duration_ms, created_at) "
            "VALUES (1, %s, 1, 0, 'http://x', %s, %s, 5, now() - make_interval(mins => %s))",
            (delivery_id, outcome, status_code, minutes_ago))


def test_filters_take_several_configs_event_types_and_last_status_codes(api, make):
    a, b = make.config(name="a"), make.config(name="b", event_types=["user.created"])
    c = make.config(event_types=["other"])
    in_a = make.delivery(a, last_status_code=500)
    in_b = make.delivery(b, last_status_code=0)
    make.delivery(a, last_status_code=404)
    make.delivery(c, last_status_code=500)
    found = listed(api, filter={"configIds": [a.id, b.id], "lastStatusCodes": [500, 0]})
    assert ids(found) == [in_b, in_a]
    assert [edge["node"]["configName"] for edge in found["edges"]] == ["b", "a"]
    by_type = listed(api, filter={"eventTypes": ["user.created", "nothing"]})
    assert ids(by_type) == [in_b]


def test_the_former_field_names_still_work_and_cannot_be_mixed_with_the_new(api, make):
    a = make.config()
    mine = make.delivery(a)
    make.delivery(make.config(event_types=["other"]))
    assert ids(listed(api, filter={"configId": a.id})) == [mine]
    assert ids(listed(api, filter={"createdAtFrom": HOUR_AGO, "configIds": [a.id]})) == [mine]
    error = api.error(LIST, {"filter": {"configId": a.id, "configIds": [a.id]}})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "configIds or configId" in error["message"]


def test_before_and_last_page_backwards_through_what_after_paged_forwards(api, make):
    config = make.config()
    created = [make.delivery(config) for _ in range(5)]
    newest_first = list(reversed(created))
    first = listed(api, first=2)
    assert ids(first) == newest_first[:2]
    assert (first["pageInfo"]["hasNextPage"], first["pageInfo"]["hasPreviousPage"]) == (True,
                                                                                       False)
    second = listed(api, first=2, after=first["pageInfo"]["endCursor"])
    assert ids(second) == newest_first[2:4]
    assert second["pageInfo"]["hasPreviousPage"] is True
    back = listed(api, last=2, before=second["pageInfo"]["startCursor"])
    assert ids(back) == newest_first[:2]
    assert (back["pageInfo"]["hasPreviousPage"], back["pageInfo"]["hasNextPage"]) == (False,
                                                                                     True)
    assert ids(listed(api, last=2)) == newest_first[3:]
    assert api.code(LIST, {"after": first["pageInfo"]["endCursor"],
                           "before": first["pageInfo"]["endCursor"]}) == "BAD_USER_INPUT"
    assert "before:" in api.error(LIST, {"last": 1, "before": "garbage"})["message"]


def test_order_by_next_attempt_lists_pending_work_soonest_first_both_ways(api, make):
    config = make.config()
    later = make.delivery(config, next_attempt_at=NOW + timedelta(hours=2))
    soon = make.delivery(config, next_attempt_at=NOW + timedelta(minutes=1))
    middle = make.delivery(config, next_attempt_at=NOW + timedelta(hours=1))
    make.delivery(config, status="succeeded", next_attempt_at=None)
    first = listed(api, first=2, orderBy="NEXT_ATTEMPT_AT")
    assert ids(first) == [soon, middle]
    rest = listed(api, first=2, after=first["pageInfo"]["endCursor"], orderBy="NEXT_ATTEMPT_AT")
    assert ids(rest) == [later] and rest["pageInfo"]["hasNextPage"] is False
    back = listed(api, last=5, before=rest["pageInfo"]["startCursor"], orderBy="NEXT_ATTEMPT_AT")
    assert ids(back) == [soon, middle]
    newest_cursor = listed(api, first=1)["pageInfo"]["endCursor"]
    assert api.code(LIST, {"after": newest_cursor, "orderBy": "NEXT_ATTEMPT_AT"}) == \
        "BAD_USER_INPUT"


def test_total_count_is_exact_for_the_filter(api, make):
    config = make.config()
    for _ in range(3):
        make.delivery(config, status="failed", next_attempt_at=None)
    make.delivery(config)
    found = listed(api, first=1, filter={"status": ["FAILED"]})
    assert (found["totalCount"], found["totalCountIsExact"]) == (3, True)


def test_a_count_past_the_bound_becomes_a_flagged_estimate(pool, make):
    config = make.config()
    for _ in range(6):
        make.delivery(config)
    assert inspection.count(pool, PLATFORM, DeliveryFilter(), bound=10) == (6, True)
    total, exact = inspection.count(pool, PLATFORM, DeliveryFilter(), bound=3)
    assert exact is False and total >= 4


def test_a_dry_run_counts_and_samples_what_a_replay_would_change_and_changes_nothing(api, make):
    config, off = make.config(), make.config(event_types=["other"])
    failed = [make.delivery(config, status="failed", next_attempt_at=None) for _ in range(2)]
    make.delivery(config, status="succeeded", next_attempt_at=None)
    orphan = make.delivery(off, status="failed", next_attempt_at=None)
    configs.deactivate(make.pool, PLATFORM, off.id)
    result = api.data(BULK, {"filter": {"createdAfter": HOUR_AGO}, "dryRun": True})
    result = result["replayDeliveries"]
    assert result["dryRun"] is True
    assert (result["wouldReplay"], result["wouldReplayIsExact"]) == (2, True)
    assert [int(d["id"]) for d in result["sample"]] == list(reversed(failed))
    assert result["replayed"] == result["expedited"] == []
    assert {make.row(i)["status"] for i in [*failed, orphan]} == {"failed"}
    assert {make.row(i)["replay_generation"] for i in failed} == {0}


def test_a_dry_run_needs_no_idempotency_key_but_an_operator(api, viewer, make):
    make.delivery(status="failed", next_attempt_at=None)
    variables = {"filter": {"createdAfter": HOUR_AGO}, "dryRun": True}
    assert api.data(BULK, variables)["replayDeliveries"]["wouldReplay"] == 1
    assert viewer.code(BULK, variables) == "FORBIDDEN"
    assert api.code(BULK, {"filter": {}, "dryRun": True}) == "BAD_USER_INPUT"


def test_attempt_history_counts_outcomes_per_bucket_and_per_config(api, make):
    a, b = make.config(name="a"), make.config(name="b", event_types=["other"])
    one, two = make.delivery(a), make.delivery(b)
    attempt(make, one, "success", 200)
    attempt(make, one, "http_error", 500)
    attempt(make, two, "timeout", 0, minutes_ago=70)
    attempt(make, two, "success", 200, minutes_ago=600)  # outside the window
    history = api.data(HISTORY)["attemptHistory"]
    assert history["complete"] is True and history["bucketSeconds"] == 3600
    assert len(history["buckets"]) == 3
    last = history["buckets"][-1]
    assert (last["attempts"], last["succeeded"], last["successRate"]) == (2, 1, 0.5)
    assert {o["outcome"]: o["count"] for o in last["outcomes"]} == {"SUCCESS": 1,
                                                                     "HTTP_ERROR": 1}
    assert sum(bucket["attempts"] for bucket in history["buckets"]) == 3
    assert [(c["configName"], c["attempts"], c["succeeded"]) for c in history["configs"]] == \
        [("a", 2, 1), ("b", 1, 0)]
    # With configIds, per-config totals come from the counts the record statement keeps
    # (rows staged by hand, as here, are not in them): tests/api/test_config_rates.py.
    only_b = api.data(HISTORY, {"configIds": [b.id]})["attemptHistory"]
    assert sum(bucket["attempts"] for bucket in only_b["buckets"]) == 1


def test_attempt_history_says_when_its_bounded_scan_stops_short(pool, make):
    delivery = make.delivery()
    for minutes, outcome in ((1, "success"), (2, "http_error"), (3, "success")):
        attempt(make, delivery, outcome, 200, minutes_ago=minutes)
    since = NOW - timedelta(hours=1)
    full = inspection.attempt_history(pool, PLATFORM, since=since, bucket_seconds=3600,
                                      config_ids=None,
                                      scan_limit=10)
    short = inspection.attempt_history(pool, PLATFORM, since=since, bucket_seconds=3600,
                                       config_ids=None,
                                       scan_limit=2)
    assert (full.complete, sum(c.attempts for c in full.counts)) == (True, 3)
    assert (short.complete, sum(c.attempts for c in short.counts)) == (False, 2)


@pytest.mark.parametrize("arguments", ["hours: 0", "hours: 1000", "bucketMinutes: 0",
                                       "hours: 168, bucketMinutes: 1"])
def test_attempt_history_refuses_windows_out_of_bounds(shared_api, arguments):
    query = f"{{ attemptHistory({arguments}) {{ complete }} }}"
    assert shared_api.code(query) == "BAD_USER_INPUT"


def test_me_tells_the_role_of_the_token(api, viewer):
    assert api.data("{ me { role canMutate } }")["me"] == {"role": "OPERATOR", "canMutate": True}
    assert viewer.data("{ me { role canMutate } }")["me"] == {"role": "VIEWER",
                                                              "canMutate": False}


def test_rejected_events_say_how_many_there_are(api, pool):
    from db import rejected

    with pool.transaction() as cursor:
        rejected.store(cursor, [rejected.Rejection(topic="t", partition=0, offset=n,
                                                   reason="not JSON", raw=b"x")
                                for n in range(3)])
    found = api.data("{ rejectedEvents(first: 2) { totalCount edges { node { id } } } }")
    assert found["rejectedEvents"]["totalCount"] == 3
    assert len(found["rejectedEvents"]["edges"]) == 2

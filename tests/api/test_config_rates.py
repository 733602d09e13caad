"""Per-config attempt rates, exact for every config however quiet beside a busy one, and the
configs that need a person first."""

from __future__ import annotations

import dataclasses

from db import deliveries, health
from db.scope import PLATFORM
from graphql_schema import queries
from tests.endpoint_health import RULES, claim, events_for, result

RATES = """
query ($filter: ConfigFilter) {
  configs(filter: $filter) {
    edges { node { id name recentAttempts(hours: 1) { hours attempts succeeded successRate } } }
  }
}"""
HISTORY = """
query ($ids: [ID!]) {
  attemptHistory(hours: 24, bucketMinutes: 60, configIds: $ids) {
    complete configs { configId configName attempts succeeded successRate }
  }
}"""
ATTENTION = """
{ configsNeedingAttention(hours: 1, first: 10) {
    config { id name } state failures attempts lastFailure lastFailureAt reason
    unanswered unansweredSince } }"""


def _attempts(make, config, *, ok: int, failed: int) -> None:
    """Record `ok` successful and `failed` 503 attempts of `config`'s deliveries."""
    events_for(make, config, ok + failed)
    results = []
    while len(results) < ok + failed:
        for claimed in claim(make, limit=50):
            answered = result(claimed, 200 if len(results) < ok else 503)
            results.append(dataclasses.replace(answered, next_delay=3600.0)
                           if answered.next_delay is not None else answered)
    deliveries.record_and_settle(make.pool, results, RULES)


def test_each_configs_recent_attempts_are_exact(api, make):
    busy = make.config(name="busy", event_types=["busy"])
    quiet = make.config(name="quiet", event_types=["quiet"])
    idle = make.config(name="idle", event_types=["idle"])
    _attempts(make, busy, ok=40, failed=10)
    _attempts(make, quiet, ok=1, failed=0)
    nodes = {edge["node"]["name"]: edge["node"]["recentAttempts"]
             for edge in api.data(RATES)["configs"]["edges"]}
    assert nodes["busy"] == {"hours": 1, "attempts": 50, "succeeded": 40, "successRate": 0.8}
    assert nodes["quiet"] == {"hours": 1, "attempts": 1, "succeeded": 1, "successRate": 1.0}
    assert nodes["idle"] == {"hours": 1, "attempts": 0, "succeeded": 0, "successRate": None}
    one = api.data(f'{{ config(id: "{idle.id}") {{ recentAttempts {{ hours attempts }} }} }}')
    assert one["config"]["recentAttempts"] == {"hours": 24, "attempts": 0}
    assert api.code('{ configs { edges { node { recentAttempts(hours: 49) { attempts } } } } }') \
        == "BAD_USER_INPUT"


def test_a_quiet_configs_history_totals_do_not_vanish_behind_a_busy_one(api, make,
                                                                          monkeypatch):
    """attemptHistory reads only the newest attempts; asked for given configs, their totals
    are exact all the same."""
    busy = make.config(name="busy", event_types=["busy"])
    quiet = make.config(name="quiet", event_types=["quiet"])
    _attempts(make, quiet, ok=2, failed=1)
    _attempts(make, busy, ok=30, failed=0)
    monkeypatch.setattr(queries, "HISTORY_SCAN_LIMIT", 10)  # the busy config's newest only
    history = api.data(HISTORY, {"ids": [quiet.id]})["attemptHistory"]
    assert history["complete"] is False
    assert history["configs"] == [{"configId": quiet.id, "configName": "quiet", "attempts": 3,
                                   "succeeded": 2, "successRate": 2 / 3}]


def test_the_configs_needing_a_person_lead_with_open_circuits_then_failures(api, make):
    fine = make.config(name="fine", event_types=["fine"])
    flaky = make.config(name="flaky", event_types=["flaky"])
    broken = make.config(name="broken", event_types=["broken"])
    opened = make.config(name="opened", event_types=["opened"])
    paused = make.config(name="paused", event_types=["paused"])
    _attempts(make, fine, ok=20, failed=0)
    _attempts(make, flaky, ok=8, failed=2)
    _attempts(make, broken, ok=0, failed=2)  # fewer than the breaker's three in a row
    health.pause(make.pool, PLATFORM, paused.id, reason="maintenance")
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE config_health SET circuit = 'open', next_probe_at = now(), "
                       "opened_at = now(), reason = 'staged' WHERE config_id = %s", (opened.id,))
    found = api.data(ATTENTION)["configsNeedingAttention"]
    assert [(f["config"]["name"], f["state"], f["failures"], f["attempts"]) for f in found] == [
        ("opened", "OPEN", 0, 0), ("broken", "HEALTHY", 2, 2), ("flaky", "HEALTHY", 2, 10),
        ("paused", "PAUSED", 0, 0)]
    assert found[1]["lastFailure"] == "HTTP 503" and found[1]["lastFailureAt"] is not None
    assert api.code("{ configsNeedingAttention(first: 0) { failures } }") == "BAD_USER_INPUT"


def test_an_endpoint_holding_its_requests_open_needs_a_look_before_any_timeout(api, make):
    """Its attempts are under way with no answer and nothing recorded yet: the configs whose
    claims are older than the threshold are listed, with how many and since when."""
    failing = make.config(name="failing", event_types=["failing"])
    hanging = make.config(name="hanging", event_types=["hanging"])
    busy = make.config(name="busy", event_types=["busy"])
    _attempts(make, failing, ok=0, failed=1)
    events_for(make, hanging, 3)
    events_for(make, busy, 1)
    claimed = claim(make)
    with make.pool.transaction() as cursor:  # the hanging endpoint's claims, 30 s old
        cursor.execute("UPDATE deliveries SET claimed_at = now() - interval '30 seconds' "
                       "WHERE config_id = %s AND status = 'delivering'", (hanging.id,))
    assert {c.config_id for c in claimed} == {hanging.id, busy.id}
    found = api.data(ATTENTION)["configsNeedingAttention"]
    assert [(f["config"]["name"], f["failures"], f["unanswered"]) for f in found] == [
        ("hanging", 0, 3), ("failing", 1, 0)]  # the busy one's claim is fresh
    assert found[0]["unansweredSince"] is not None and found[1]["unansweredSince"] is None

"""Ordered delivery through the API: a config's ordering and failure policy, the keys a
failure holds (Config.blockedKeys, stats.blockedKeys) and skipDelivery."""

from __future__ import annotations

import dataclasses

from db import configs, deliveries, events
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from graphql_schema import cursors
from tests.endpoint_health import RULES, claim, result

CREATE = """
mutation ($input: CreateConfigInput!) {
  createConfig(input: $input) { config { id ordering blockOnFailure } }
}"""
BLOCKED = """
query ($id: ID!, $first: Int, $after: String) {
  config(id: $id) {
    blockedKeys(first: $first, after: $after) {
      edges { cursor node { orderingKey deliveryId sequence since lastStatusCode waiting } }
      hasNextPage endCursor
    }
  }
  stats { blockedKeys }
}"""
SKIP = """
mutation ($id: ID!) { skipDelivery(id: $id) { deliveryId orderingKey sequence } }"""


def _publish(make, type: str, n: int, key: str) -> int:
    event = events.new_event(f"{type}-{n}", type, {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1000, ordering_key=key)
    (delivery_id,) = events.publish(make.pool, event).delivery_ids
    return int(delivery_id)


def _fail_head(make) -> int:
    """Claim the one due delivery and record a permanent failure (HTTP 400)."""
    (claimed,) = claim(make, limit=10)
    failed = dataclasses.replace(result(claimed, 400), next_status="failed", next_delay=None)
    deliveries.record_and_settle(make.pool, [failed], RULES)
    return claimed.id


def test_a_config_is_created_ordered_and_its_held_keys_are_listed_and_skipped(api, make):
    config = api.data(CREATE, {"input": {"endpoint": "https://example.com/in",
                                         "eventTypes": ["ledger"], "ordering": "PER_KEY"}})
    config = config["createConfig"]["config"]
    assert (config["ordering"], config["blockOnFailure"]) == ("PER_KEY", True)
    ids = [_publish(make, "ledger", n, "acct-1") for n in range(3)]
    failed = _fail_head(make)
    assert failed == ids[0]
    data = api.data(BLOCKED, {"id": config["id"]})
    (edge,) = data["config"]["blockedKeys"]["edges"]
    assert edge["node"] | {"since": None} == {
        "orderingKey": "acct-1", "deliveryId": str(failed), "sequence": 1, "since": None,
        "lastStatusCode": 400, "waiting": 2}
    assert data["stats"]["blockedKeys"] == 1
    assert claim(make, limit=10) == []  # the key is held: nothing of it is due

    assert api.code(SKIP, {"id": str(ids[1])}) == "NOT_ELIGIBLE"  # it waits; holds nothing
    skipped = api.data(SKIP, {"id": str(failed)})["skipDelivery"]
    assert skipped == {"deliveryId": str(failed), "orderingKey": "acct-1", "sequence": 1}
    data = api.data(BLOCKED, {"id": config["id"]})
    assert data["config"]["blockedKeys"]["edges"] == [] and data["stats"]["blockedKeys"] == 0
    assert [c.id for c in claim(make, limit=10)] == [ids[1]]  # the key went on
    assert api.code(SKIP, {"id": str(failed)}) == "NOT_ELIGIBLE"  # skipped already
    assert api.code(SKIP, {"id": "999999"}) == "NOT_FOUND"


def test_blocked_keys_page_by_key(api, make):
    config = make.config(event_types=["paged"], ordering="per_key")
    for n, key in enumerate(("k3", "k1", "k2")):
        _publish(make, "paged", n, key)
    for _ in range(3):  # each key's one delivery fails and holds it
        (claimed,) = claim(make, limit=1)
        failed = dataclasses.replace(result(claimed, 400), next_status="failed",
                                     next_delay=None)
        deliveries.record_and_settle(make.pool, [failed], RULES)
    first = api.data(BLOCKED, {"id": config.id, "first": 2})["config"]["blockedKeys"]
    assert [e["node"]["orderingKey"] for e in first["edges"]] == ["k1", "k2"]
    assert first["hasNextPage"] is True
    rest = api.data(BLOCKED, {"id": config.id, "first": 2, "after": first["endCursor"]})
    assert [e["node"]["orderingKey"] for e in rest["config"]["blockedKeys"]["edges"]] == ["k3"]
    assert api.code(BLOCKED, {"id": config.id, "after": "bm9wZQ"}) == "BAD_USER_INPUT"
    for wrong in (cursors.encode("blockedKeys", PLATFORM, key=5),
                  cursors.encode("healthChanges", PLATFORM, id=1)):
        assert api.code(BLOCKED, {"id": config.id, "after": wrong}) == "BAD_USER_INPUT"


def test_a_key_held_twice_is_one_key_in_the_listing_its_pages_and_the_count(api, make):
    """An earlier failure of a key, skipped, then replayed and failed again behind a later
    failure of the same key: two deliveries hold the key, which is still one key."""
    rules = dataclasses.replace(RULES, failures_to_open=100)  # no circuit in the way

    def fail_what_is_due() -> list[int]:
        claimed = claim(make, limit=10, rules=rules)
        for one in claimed:
            failed = dataclasses.replace(result(one, 400), next_status="failed",
                                         next_delay=None)
            deliveries.record_and_settle(make.pool, [failed], rules)
        return sorted(one.id for one in claimed)

    config = make.config(event_types=["twice"], ordering="per_key")
    earlier, later = (_publish(make, "twice", n, "k2") for n in range(2))
    other = _publish(make, "twice", 2, "k1")
    assert fail_what_is_due() == [earlier, other]
    api.data(SKIP, {"id": str(earlier)})
    assert fail_what_is_due() == [later]  # the key went on, and its next failure holds it
    with make.pool.transaction() as cursor:
        deliveries.replay(cursor, PLATFORM, earlier)  # its key's head again: sent, and fails again
    assert fail_what_is_due() == [earlier]
    assert make.count("SELECT count(*) FROM deliveries WHERE blocks_key AND ordering_key = "
                      "'k2'") == 2

    data = api.data(BLOCKED, {"id": config.id})
    nodes = [e["node"] for e in data["config"]["blockedKeys"]["edges"]]
    assert [(n["orderingKey"], n["deliveryId"]) for n in nodes] == [("k1", str(other)),
                                                                     ("k2", str(earlier))]
    assert data["stats"]["blockedKeys"] == 2
    seen, after = [], None
    while True:  # one key a page: every key once, none dropped
        page = api.data(BLOCKED, {"id": config.id, "first": 1, "after": after})
        page = page["config"]["blockedKeys"]
        seen += [e["node"]["orderingKey"] for e in page["edges"]]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert seen == ["k1", "k2"]


def test_the_count_of_held_keys_leaves_out_inactive_and_deleted_configs(api, make):
    kept, paused, gone = (make.config(event_types=[f"count-{n}"], ordering="per_key")
                          for n in range(3))
    for n, config in enumerate((kept, paused, gone)):
        _publish(make, config.event_types[0], n, "k")
        _fail_head(make)
    assert api.data(BLOCKED, {"id": kept.id})["stats"]["blockedKeys"] == 3
    configs.deactivate(make.pool, PLATFORM, paused.id)
    configs.delete(make.pool, PLATFORM, gone.id)
    assert api.data(BLOCKED, {"id": kept.id})["stats"]["blockedKeys"] == 1

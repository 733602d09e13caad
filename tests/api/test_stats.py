"""Stats and rejected broker messages through the API."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

from db import rejected, stalls
from db.rejected import Rejection
from db.stalls import Stall

STATS = """{ stats { byStatus { status count } queueDepth oldestDueAgeSeconds rejectedEvents } }"""
REJECTED = """
query ($first: Int, $after: String) {
  rejectedEvents(first: $first, after: $after) {
    edges { cursor node { id topic partition offset reason raw createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}"""


def test_stats_of_an_empty_database_list_every_status_with_zeros(api):
    assert api.data(STATS)["stats"] == {
        "byStatus": [{"status": s, "count": 0}
                     for s in ("PENDING", "DELIVERING", "SUCCEEDED", "FAILED", "CANCELLED")],
        "queueDepth": 0,
        "oldestDueAgeSeconds": None,
        "rejectedEvents": 0,
    }


def test_stats_count_statuses_and_age_the_oldest_due_delivery(api, make, pool):
    config = make.config()
    now = datetime.now(UTC)
    make.delivery(config, next_attempt_at=now - timedelta(seconds=90))
    make.delivery(config, next_attempt_at=now + timedelta(hours=1))
    make.delivery(config, status="succeeded", next_attempt_at=None)
    make.delivery(config, status="failed", next_attempt_at=None)
    make.delivery(config, status="failed", next_attempt_at=None)
    with pool.transaction() as cursor:
        rejected.store(cursor, [Rejection("t", 0, 1, "not JSON", b"\x00")])
    stats = api.data(STATS.replace("count", "count estimated"))["stats"]
    waited = (datetime.now(UTC) - now).total_seconds()
    assert not any(row["estimated"] for row in stats["byStatus"])  # small counts are exact
    counts = {row["status"]: row["count"] for row in stats["byStatus"]}
    assert counts == {"PENDING": 2, "DELIVERING": 0, "SUCCEEDED": 1, "FAILED": 2,
                      "CANCELLED": 0}
    assert stats["queueDepth"] == 2
    assert 89 <= stats["oldestDueAgeSeconds"] <= 91 + waited
    assert stats["rejectedEvents"] == 1


def test_nothing_due_means_no_oldest_due_age(api, make):
    make.delivery(next_attempt_at=datetime.now(UTC) + timedelta(minutes=5))
    assert api.data(STATS)["stats"]["oldestDueAgeSeconds"] is None


def test_rejected_events_page_newest_first_with_their_raw_bytes(api, pool):
    raws = [b"\xff\xfe not json", None, b'{"no": "type"}']
    with pool.transaction() as cursor:
        rejected.store(cursor, [Rejection("orders", 3, 2**40 + i, f"reason {i}", raw)
                                for i, raw in enumerate(raws)])
    first = api.data(REJECTED, {"first": 2})["rejectedEvents"]
    assert first["pageInfo"]["hasNextPage"] is True
    nodes = [edge["node"] for edge in first["edges"]]
    assert [n["reason"] for n in nodes] == ["reason 2", "reason 1"]
    assert nodes[0]["raw"] == base64.b64encode(raws[2]).decode()
    assert nodes[1]["raw"] is None
    assert nodes[0] | {"id": None, "createdAt": None, "raw": None} == {
        "id": None, "topic": "orders", "partition": 3, "offset": str(2**40 + 2),
        "reason": "reason 2", "raw": None, "createdAt": None,
    }
    rest = api.data(REJECTED, {"after": first["pageInfo"]["endCursor"]})["rejectedEvents"]
    assert [edge["node"]["reason"] for edge in rest["edges"]] == ["reason 0"]
    assert base64.b64decode(rest["edges"][0]["node"]["raw"]) == raws[0]
    assert rest["pageInfo"]["hasNextPage"] is False


def test_rejected_events_refuse_bad_cursors_and_page_sizes(api):
    assert api.code(REJECTED, {"after": "zzz"}) == "BAD_USER_INPUT"
    assert api.code(REJECTED, {"first": 5000}) == "BAD_USER_INPUT"


def test_a_viewer_sees_stats_and_rejected_events(viewer):
    assert viewer.data(STATS)["stats"]["queueDepth"] == 0
    assert viewer.data(REJECTED)["rejectedEvents"]["edges"] == []


STALLED = """
{ stats { stalledPartitions { groupId topic partition offset reason worker since } } }"""


def test_stats_show_the_kafka_partitions_held_as_undecodable(api, pool):
    assert api.data(STALLED)["stats"]["stalledPartitions"] == []
    stalls.record(pool, "webhooks", "worker-a", [
        Stall("orders", 2, 2**40, "CorruptRecordError: failed crc check"),
        Stall("orders", 0, 7, "UnsupportedCodecError: Unrecognized compression type: 5")])
    stalls.record(pool, "webhooks", "worker-b", [Stall("orders", 0, 9, "CorruptRecordError")])
    shown = api.data(STALLED)["stats"]["stalledPartitions"]
    # oldest first: partition 0 stalled again, at another offset, after partition 2
    assert [{k: v for k, v in row.items() if k != "since"} for row in shown] == [
        {"groupId": "webhooks", "topic": "orders", "partition": 2, "offset": str(2**40),
         "reason": "CorruptRecordError: failed crc check", "worker": "worker-a"},
        {"groupId": "webhooks", "topic": "orders", "partition": 0, "offset": "9",
         "reason": "CorruptRecordError", "worker": "worker-b"},
    ]
    assert all(datetime.fromisoformat(row["since"]) for row in shown)

    stalls.clear(pool, "webhooks", [("orders", 0), ("orders", 2)], held=[("orders", 2)])
    assert [row["partition"] for row in api.data(STALLED)["stats"]["stalledPartitions"]] == [2]

"""Random bytes and malformed envelopes on the topic: all quarantined, none blocks a good one."""

import json
import random

from db import rejected
from tests.helpers import wait_until
from tests.kafka import consumer_settings

GOOD = 60
HOSTILE = 240


def _hostile(rng: random.Random) -> bytes | None:
    """One message that must never become an event."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 3000))
    if kind == 1:
        return None  # tombstone
    if kind == 2:
        return json.dumps(rng.choice([[1, 2], "text", 42, None, True, 1.5])).encode()
    if kind == 3:
        return json.dumps({"payload": {"n": rng.random()}}).encode()  # no type
    if kind == 4:
        return json.dumps({"type": rng.choice(["", 5, None, ["t"], {"t": 1}])}).encode()
    if kind == 5:
        return json.dumps({"type": "fuzz", "id": rng.choice([{"a": 1}, [1], 1.5, True, ""])}
                          ).encode()
    if kind == 6:
        return b'{"type": "fuzz", "payload": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    if kind == 7:
        return json.dumps({"type": "fuzz", "payload": "x" * 5000}).encode()  # too large
    return rng.randbytes(20) + b'{"type": "fuzz"}'  # garbage before JSON


def test_fuzzed_topic_quarantines_every_bad_message_and_delivers_every_good_one(
        make, receiver, topic, start_worker):
    rng = random.Random(20261129)
    make.config(endpoint=receiver.url, event_types=["fuzz"])
    good_ids = []
    bad = 0
    for n in range(GOOD + HOSTILE):
        if n % 5 == 0:
            good_ids.append(f"good-{n}")
            topic.send({"type": "fuzz", "id": f"good-{n}", "payload": {"n": n}},
                       partition=n % 4)
        else:
            topic.send(_hostile(rng), raw=True, partition=n % 4)
            bad += 1
    start_worker(**consumer_settings(topic), max_payload=4096)
    requests = receiver.wait_for(len(good_ids), timeout=60)
    assert sorted(json.loads(r.body)["id"] for r in requests) == sorted(good_ids)
    wait_until(lambda: rejected.count(make.pool) == bad, timeout=30)
    assert make.count("SELECT count(*) FROM events") == len(good_ids)
    reasons = {r.reason.split(":")[0] for r in rejected.page(make.pool, limit=1000)}
    assert reasons <= {"tombstone", "too_large", "invalid_utf8", "invalid_json",
                       "not_an_object", "no_type", "invalid_id", "invalid_event"}

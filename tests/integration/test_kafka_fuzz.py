"""Random bytes and malformed envelopes on the topic: all quarantined, none blocks a good one."""

import json
import random

from db import rejected
from tests.catalogues.poison_messages import MAX_PAYLOAD, REASONS, poison, reason_kind
from tests.helpers import wait_until
from tests.kafka import consumer_settings

GOOD = 60
HOSTILE = 240


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
            topic.send(poison(rng), raw=True, partition=n % 4)
            bad += 1
    start_worker(**consumer_settings(topic), max_payload=MAX_PAYLOAD)
    requests = receiver.wait_for(len(good_ids))
    assert sorted(json.loads(r.body)["id"] for r in requests) == sorted(good_ids)
    wait_until(lambda: rejected.count(make.pool) == bad)
    assert make.count("SELECT count(*) FROM events") == len(good_ids)
    assert {reason_kind(r.reason) for r in rejected.page(make.pool, limit=1000)} <= REASONS

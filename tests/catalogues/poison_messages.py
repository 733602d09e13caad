"""Poison messages for a Kafka topic: random bytes and malformed envelopes, none an event.

Shared by tests/integration/test_kafka_fuzz.py and the `poison` chaos scenario. With
WEBHOOKS_MAX_PAYLOAD at most MAX_PAYLOAD, the consumer must quarantine every one of them
(db/rejected.py) with one of REASONS.
"""

from __future__ import annotations

import json
import random

MAX_PAYLOAD = 4096  # bytes: the large envelopes below are over it
EVENT_TYPE = "fuzz"
REASONS = frozenset({"tombstone", "too_large", "invalid_utf8", "invalid_json", "not_an_object",
                     "no_type", "invalid_id", "invalid_event"})


def poison(rng: random.Random) -> bytes | None:
    """Return one message that must never become an event (None: a tombstone)."""
    kind = rng.randrange(13)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 3000))
    if kind == 1:
        return None
    if kind == 2:
        return json.dumps(rng.choice([[1, 2], "text", 42, None, True, 1.5])).encode()
    if kind == 3:
        return json.dumps({"payload": {"n": rng.random()}}).encode()  # no type
    if kind == 4:
        return json.dumps({"type": rng.choice(["", 5, None, ["t"], {"t": 1}])}).encode()
    if kind == 5:
        return json.dumps({"type": EVENT_TYPE,
                           "id": rng.choice([{"a": 1}, [1], 1.5, True, ""])}).encode()
    if kind == 6:
        return (b'{"type": "' + EVENT_TYPE.encode() + b'", "payload": ' + b"[" * 5000
                + b"]" * 5000 + b"}")
    if kind == 7:  # too large
        return json.dumps({"type": EVENT_TYPE, "payload": "x" * (MAX_PAYLOAD + 904)}).encode()
    if kind == 8:
        text = json.dumps({"type": EVENT_TYPE, "id": f"cut-{rng.random()}", "payload": [1, 2]})
        return text[:rng.randrange(len(text))].encode()  # cut short
    if kind == 9:
        return b'{"type": "' + EVENT_TYPE.encode() + b'", "payload": ' + rng.choice(
            [b"NaN", b"-Infinity", b"1e999"]) + b"}"  # not JSON numbers, or one that overflows
    if kind == 10:  # small, but nested too deeply
        return (b'{"type": "' + EVENT_TYPE.encode() + b'", "payload": ' + b"[" * 1500
                + b"]" * 1500 + b"}")
    if kind == 11:  # an id or type the service refuses: too long, NUL, lone surrogate
        return json.dumps({"type": EVENT_TYPE, **rng.choice([
            {"id": "x" * 1000}, {"type": "t" * 1000}, {"id": "a\u0000b"}, {"id": "\ud800"},
            {"type": "\udc00"}])}).encode()
    return rng.randbytes(20) + b'{"type": "' + EVENT_TYPE.encode() + b'"}'  # garbage before JSON


def reason_kind(reason: str) -> str:
    """Return the kind of a rejected message's reason (`invalid_json: ...` -> `invalid_json`)."""
    return reason.split(":")[0]

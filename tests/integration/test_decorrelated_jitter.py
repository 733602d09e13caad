"""Decorrelated jitter carries each backoff forward through the database."""

import random
from datetime import UTC, datetime

from db import deliveries
from db.vocabulary import AttemptOutcome
from service.dispatch.sender import Response
from service.dispatch.verdict import judge
from service.policy.backoff import RetryPolicy

POLICY = RetryPolicy(min_backoff=1.0, max_backoff=3600.0, jitter="decorrelated")


def _attempt(make, delivery_id, response, rng):
    make.set(delivery_id, next_attempt_at=datetime.now(UTC))
    (claimed,) = deliveries.claim_due(make.pool, owner="w", limit=1)
    result = judge(claimed, response, POLICY, now=claimed.claimed_at, rng=rng)
    deliveries.record_and_settle(make.pool, [result])
    return claimed, result


def test_each_backoff_grows_from_the_one_stored_after_the_attempt_before(make):
    make.config()
    _, (delivery_id,) = make.event()
    rng = random.Random(11)
    failing = Response(AttemptOutcome.HTTP_ERROR, 503, 0.01)
    stored = None
    chain = []
    for _ in range(8):
        claimed, result = _attempt(make, delivery_id, failing, rng)
        assert claimed.last_backoff == stored
        high = max(1.0, min(3600.0, 3 * (stored if stored is not None else 1.0)))
        assert 1.0 <= result.next_delay <= high
        row = make.row(delivery_id)
        assert row["status"] == "pending"
        assert row["last_backoff_seconds"] == result.next_backoff == result.next_delay
        stored = row["last_backoff_seconds"]
        chain.append(stored)
    assert len(set(chain)) == len(chain)

    _attempt(make, delivery_id, Response(AttemptOutcome.SUCCESS, 200, 0.01), rng)
    row = make.row(delivery_id)
    assert (row["status"], row["last_backoff_seconds"]) == ("succeeded", None)


def test_a_retry_after_stretches_the_delay_but_not_the_carried_backoff(make):
    make.config()
    _, (delivery_id,) = make.event()
    response = Response(AttemptOutcome.HTTP_ERROR, 429, 0.01, retry_after="7200")
    _, result = _attempt(make, delivery_id, response, random.Random(2))
    row = make.row(delivery_id)
    assert result.next_delay == 7200
    assert 1.0 <= row["last_backoff_seconds"] <= 3.0

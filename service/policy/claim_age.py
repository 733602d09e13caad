"""How long a claimed delivery may wait in a worker before it must go back unsent.

A claim older than WEBHOOKS_CLAIM_TIMEOUT is stale: the recovery sweep hands it to another
worker. So a worker never starts a send whose result could be recorded only after that: the
claim goes back unsent instead, and no endpoint gets the same delivery from two workers.

A claim waits in a worker behind the sends of its config: the worker holds at most HOLD
shares of a config, one sending and the rest ready behind it, so the last one ready waits
for HOLD - 1 rounds of sends, each at most WEBHOOKS_HTTP_TIMEOUT, before its own.
"""

from __future__ import annotations

HOLD = 3  # shares of a config a worker holds at most: one sending, two ready behind it
RECORD_MARGIN = 2.0  # seconds from the end of a send to its result's commit, at most


def may_send(age: float, *, http_timeout: float, claim_timeout: float) -> bool:
    """Return True when a claim `age` seconds old can be sent and its result recorded before
    it goes stale."""
    return age + http_timeout + RECORD_MARGIN < claim_timeout


def shortest_claim_timeout(http_timeout: float) -> float:
    """Return the claim timeout below which a claim waiting its turn could go stale: it
    waits behind HOLD - 1 rounds of its config's sends, sends, and is recorded."""
    return HOLD * http_timeout + RECORD_MARGIN

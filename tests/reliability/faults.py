"""The chaos receiver's fault schedule: which attempts fail, how, and what that must record.

Pure functions, shared by the receiver process and the checker. The answer to a POST
depends only on the seed and its (webhook-id, webhook-replay-generation, webhook-attempt),
so a request sent again after a crash gets the same answer as the first time, and the
end state of every delivery can be predicted from the schedule alone.
"""

from __future__ import annotations

import hashlib

OK = "ok"
KINDS = ("500", "hang", "reset", "slow_body")  # the ways an attempt fails, equally likely

# What the dispatcher must record for an attempt answered with each kind: (outcome, status)
RECORDED = {
    OK: ("success", 200),
    "500": ("http_error", 500),
    "hang": ("timeout", 0),  # no answer until the client gives up
    "reset": ("network_error", 0),  # TCP RST once the request is read
    "slow_body": ("timeout", 0),  # a 200 whose body trickles past any timeout
}


def choose(seed: int, webhook_id: str, generation: int, attempt: int, fail_rate: float) -> str:
    """Return how the receiver answers this attempt: OK or one of KINDS."""
    digest = hashlib.sha256(f"{seed}:{webhook_id}:{generation}:{attempt}".encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    if draw >= fail_rate:
        return OK
    return KINDS[digest[8] % len(KINDS)]


def first_success(seed: int, webhook_id: str, fail_rate: float, max_attempts: int,
                  generation: int = 0) -> int | None:
    """Return the attempt number that will succeed within the budget, or None (budget ends)."""
    for attempt in range(1, max_attempts + 1):
        if choose(seed, webhook_id, generation, attempt, fail_rate) == OK:
            return attempt
    return None

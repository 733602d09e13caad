"""An endpoint script for ordered delivery: which deliveries of each key succeeded, in what
order and with which `webhook-sequence`, and how many of one key were ever in flight at once.
"""

from __future__ import annotations

import collections
import json
import threading

from tests.receivers import Reply


class Script:
    """An endpoint that fails the first attempt of some events with 503, records who is in
    flight at once per key, and answers the rest with 200."""

    def __init__(self, fail_first: set[int], status: int = 503) -> None:
        self.fail_first = fail_first
        self.status = status
        self.seen: set[int] = set()
        self.in_flight: collections.Counter = collections.Counter()
        self.most_at_once = 0
        self.succeeded: list[tuple[str | None, int, str | None]] = []
        self.lock = threading.Lock()

    def __call__(self, request) -> Reply:
        n = json.loads(request.body)["data"]["n"]
        key = request.headers.get("webhook-ordering-key")
        with self.lock:
            self.in_flight[key] += 1
            self.most_at_once = max(self.most_at_once, self.in_flight[key])
        try:
            first = n not in self.seen
            self.seen.add(n)
            if first and n in self.fail_first:
                return Reply(self.status, delay=0.02)
            self.succeeded.append((key, n, request.headers.get("webhook-sequence")))
            return Reply(200, delay=0.01)
        finally:
            with self.lock:
                self.in_flight[key] -= 1

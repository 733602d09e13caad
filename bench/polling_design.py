"""The original design, for comparison: the seed's retrier loop on our own primitives.

Every `--period` (3 s): claim up to `--batch` (50) due deliveries, send them all
concurrently, record each, wait for the whole batch, then sleep — no LISTEN/NOTIFY, no
pipelining (the former retrier's tick loop). `python -m bench.polling_design --dsn DSN`.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402
import gevent.pool  # noqa: E402

from db import deliveries  # noqa: E402
from db.pool import ConnectionPool  # noqa: E402
from service.dispatch import outgoing  # noqa: E402
from service.dispatch.sender import Sender  # noqa: E402
from service.dispatch.verdict import judge  # noqa: E402
from service.policy.backoff import RetryPolicy  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--period", type=float, default=3.0)
    args = parser.parse_args()
    pool = ConnectionPool(args.dsn, size=10)
    sender = Sender(timeout=30, concurrency=args.batch, allow_private=True)
    policy = RetryPolicy()

    def deliver(claimed) -> None:
        body = outgoing.body(claimed)
        response = sender.post(claimed.endpoint, body, outgoing.headers(claimed, body))
        deliveries.record_and_settle(
            pool, [judge(claimed, response, policy, now=claimed.claimed_at)])

    while True:
        claimed = deliveries.claim_due(pool, owner="polling-design", limit=args.batch)
        group = gevent.pool.Pool(args.batch)
        for item in claimed:
            group.spawn(deliver, item)
        group.join()
        time.sleep(args.period)


if __name__ == "__main__":
    sys.exit(main())

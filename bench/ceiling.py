"""The raw ceiling: a gevent pool of `requests` POSTs with no database, same concurrency.

`python -m bench.ceiling --url URL --concurrency 50 --seconds 10 [--mode session|sender]`
prints one JSON object with the POSTs per second reached and the CPU time each POST cost
this process. `session` is plain `requests.Session.post`, as a Python team would write it;
`sender` is the dispatcher's own HTTP path (service/dispatch/sender.py) with no database
around it. Bodies and headers are shaped like real deliveries.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402
import gevent.pool  # noqa: E402
import requests  # noqa: E402
from requests.adapters import HTTPAdapter  # noqa: E402

from service.dispatch.sender import Sender  # noqa: E402
from service.policy.signing import headers as signature_headers  # noqa: E402

SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--mode", choices=("session", "sender"), default="session")
    args = parser.parse_args()
    sender = Sender(timeout=30, concurrency=args.concurrency, allow_private=True)
    session = requests.Session()
    session.trust_env = False
    adapter = HTTPAdapter(pool_connections=args.concurrency, pool_maxsize=args.concurrency,
                          max_retries=0)
    session.mount("http://", adapter)
    body = json.dumps({"id": "evt", "type": "bench", "timestamp": "2026-01-01T00:00:00Z",
                       "data": {"n": 1, "text": "x" * 100}}).encode()
    done = 0
    deadline = time.monotonic() + args.seconds

    def post_until_the_deadline() -> None:
        """POST again and again until the deadline; once at least, on a starved machine too."""
        nonlocal done
        while True:
            headers = {"Content-Type": "application/json", **signature_headers(
                [SECRET], str(done), int(time.time()), body)}
            if args.mode == "sender":
                sender.post(args.url, body, headers)
            else:
                response = session.post(args.url, data=body, headers=headers, timeout=30,
                                        allow_redirects=False, stream=True)
                for _ in response.raw.stream(16384, decode_content=False):
                    pass
                response.close()
            done += 1
            if time.monotonic() >= deadline:
                return

    started = time.monotonic()
    cpu_started = time.process_time()
    pool = gevent.pool.Pool(args.concurrency)
    for _ in range(args.concurrency):
        pool.spawn(post_until_the_deadline)
    pool.join()
    elapsed = time.monotonic() - started
    cpu = time.process_time() - cpu_started
    print(json.dumps({"posts": done, "seconds": elapsed, "posts_per_second": done / elapsed,
                      "cpu_ms_per_post": cpu / done * 1000}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

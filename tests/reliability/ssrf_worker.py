"""`webhooks worker` that resolves the SSRF catalogue's fake names and logs every connection.

`python -m tests.reliability.ssrf_worker --connections FILE [worker flags]`: the real worker
(service.cli), with `socket.getaddrinfo` answering the FAKE_DNS of
tests/catalogues/ssrf_targets.py and one JSON line `[host, port]` appended to FILE for every
connection the sender opens, before it is opened. Everything else (settings from the
environment, signals, exit codes) is the worker's own.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

import urllib3.util.connection  # noqa: E402

from service import cli  # noqa: E402
from tests.catalogues.ssrf_targets import resolver  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", required=True, help="append one line per connection")
    args, worker_flags = parser.parse_known_args()
    log = open(args.connections, "a", buffering=1)  # noqa: SIM115  (open while the worker runs)
    real_connect = urllib3.util.connection.create_connection

    def create_connection(address, *more, **options):
        log.write(json.dumps(list(address)) + "\n")
        return real_connect(address, *more, **options)

    socket.getaddrinfo = resolver(socket.getaddrinfo)
    urllib3.util.connection.create_connection = create_connection
    return cli.main(["worker", *worker_flags])


if __name__ == "__main__":
    sys.exit(main())

"""A flaky webhook endpoint for chaos runs, in its own process; records every request it reads.

`python -m tests.reliability.receiver --port P --record FILE [--fail-rate 0.3] [--seed N]`

Each POST is answered as tests.reliability.faults.choose() says for its webhook-id,
webhook-replay-generation and webhook-attempt: `ok` (200), `500`, `hang` (no answer until
the client hangs up), `reset` (TCP RST once the request is read) or `slow_body` (200 and a
Content-Length, then one byte every STALL_STEP seconds). One JSON line per request goes to
FILE: {"id", "gen", "attempt", "kind", "sent", "t"}, where `sent` says whether a complete
2xx response was written. Prints `ready` once listening; SIGTERM flushes FILE and exits.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from service.local.processes import serve_until_sigterm  # noqa: E402
from tests.catalogues.hostile_endpoints import read_request, request_headers  # noqa: E402
from tests.reliability.faults import OK, choose  # noqa: E402

STALL = 30.0  # seconds a hang or slow body lasts at most when the client never hangs up
STALL_STEP = 0.2  # seconds between two bytes of a slow body
SLOW_BODY = b"x" * 200  # 40 s at STALL_STEP: always past the client's timeout
OK_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
ERROR_RESPONSE = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nerror"
SLOW_HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(SLOW_BODY)


class FlakyEndpoint:
    def __init__(self, record, *, seed: int, fail_rate: float) -> None:
        self.record = record
        self.seed = seed
        self.fail_rate = fail_rate

    def handle(self, sock: socket.socket, address) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        try:
            while True:
                head, buffer = read_request(sock, buffer)
                if head is None:
                    return
                if not self._answer(sock, request_headers(head)):
                    return
        except OSError:
            return
        finally:
            sock.close()

    def _answer(self, sock: socket.socket, headers: dict[str, str]) -> bool:
        """Answer one request as scheduled; return False when the connection must end."""
        note = {"id": headers.get("webhook-id", ""),
                "gen": int(headers.get("webhook-replay-generation", "0")),
                "attempt": int(headers.get("webhook-attempt", "0")), "t": round(time.time(), 3)}
        kind = choose(self.seed, note["id"], note["gen"], note["attempt"], self.fail_rate)
        if kind == OK:
            try:
                sock.sendall(OK_RESPONSE)
            except OSError:
                self._note(note, kind, sent=False)
                return False
            self._note(note, kind, sent=True)
            return True
        self._note(note, kind, sent=False)
        if kind == "500":
            sock.sendall(ERROR_RESPONSE)
            return True
        if kind == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif kind == "hang":
            with gevent.Timeout(STALL, False):
                sock.recv(1)  # returns when the client hangs up
        elif kind == "slow_body":
            with gevent.Timeout(STALL, False):
                sock.sendall(SLOW_HEAD)
                for byte in SLOW_BODY:
                    gevent.sleep(STALL_STEP)
                    sock.sendall(bytes([byte]))
        return False

    def _note(self, note: dict, kind: str, *, sent: bool) -> None:
        self.record.write(json.dumps({**note, "kind": kind, "sent": sent}) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", required=True, help="append one JSON line per request here")
    parser.add_argument("--fail-rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with open(args.record, "a", buffering=1024 * 1024) as record:
        endpoint = FlakyEndpoint(record, seed=args.seed, fail_rate=args.fail_rate)
        serve_until_sigterm(endpoint.handle, args.port, backlog=2048)
    return 0


if __name__ == "__main__":
    sys.exit(main())

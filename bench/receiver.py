"""A fast HTTP endpoint for benchmarks, run as its own process: answers 200 to every POST.

`python -m bench.receiver --port P [--record FILE] [--delay SECONDS | --hang]`. With
--record, it notes for every request the webhook-id and the delay since the body's
`data.sent_at` (Unix seconds) and writes them as JSON lines when it gets SIGTERM. --delay
answers each request that much later (a slow endpoint); --hang never answers (an endpoint
that takes every request and lets it time out).
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from service.local.processes import serve_until_sigterm  # noqa: E402

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
MAX_HEAD = 64 * 1024


class Endpoint:
    def __init__(self, record: bool, delay: float = 0.0, hang: bool = False) -> None:
        self.record = record
        self.delay = delay
        self.hang = hang
        self.requests = 0
        self.delays: list[tuple[str, float]] = []

    def handle(self, sock: socket.socket, address) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = sock.recv(65536)
                    if not chunk or len(buffer) > MAX_HEAD:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = _content_length(head)
                while len(buffer) < length:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
                self.requests += 1
                if self.record:
                    self._note(head, body)
                if self.hang:
                    gevent.sleep(3600)
                if self.delay:
                    gevent.sleep(self.delay)
                sock.sendall(RESPONSE)
        except OSError:
            return
        finally:
            sock.close()

    def _note(self, head: bytes, body: bytes) -> None:
        arrived = time.time()
        try:
            sent = json.loads(body)["data"]["sent_at"]
        except (ValueError, KeyError, TypeError):
            return
        webhook_id = ""
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"webhook-id:"):
                webhook_id = line.split(b":", 1)[1].strip().decode()
        self.delays.append((webhook_id, arrived - sent))


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            return int(line[15:])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", help="write per-request delays here on SIGTERM")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--hang", action="store_true", help="never answer")
    args = parser.parse_args()
    endpoint = Endpoint(record=bool(args.record), delay=args.delay, hang=args.hang)
    serve_until_sigterm(endpoint.handle, args.port, backlog=1024)
    if args.record:
        with open(args.record, "w") as out:
            for webhook_id, delay in endpoint.delays:
                out.write(json.dumps({"id": webhook_id, "delay": delay}) + "\n")
    print(json.dumps({"requests": endpoint.requests}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

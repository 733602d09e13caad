"""A plain TCP relay on 127.0.0.1: it forwards bytes both ways and reads none of them, as a
port forward, docker-proxy, a cloud SQL proxy or an SSH tunnel does.

For a server reachable at another address than its own: a broker known by an address nobody
listens on until it is up, a PostgreSQL behind something that is not a pooler.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import gevent
from gevent.server import StreamServer


@contextlib.contextmanager
def relaying(port: int, target: int) -> Iterator[None]:
    """Relay each connection to 127.0.0.1:`port` to 127.0.0.1:`target`, both ways, until
    the block ends."""

    def relay(client: socket.socket, _address: object) -> None:
        with client, socket.create_connection(("127.0.0.1", target)) as upstream:
            pumps = [gevent.spawn(_pump, client, upstream), gevent.spawn(_pump, upstream, client)]
            gevent.joinall(pumps, count=1)
            gevent.killall(pumps)

    server = StreamServer(("127.0.0.1", port), relay)
    server.start()
    try:
        yield
    finally:
        server.stop(timeout=1)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):  # either side hung up
        while data := source.recv(65536):
            sink.sendall(data)

"""The worker's small HTTP server: `/metrics` (Prometheus), `/healthz` and `/readyz`."""

from __future__ import annotations

import errno
import json
import socket
from collections.abc import Callable

from gevent.pywsgi import WSGIServer

from db.pool import ConnectionPool
from service.runtime.telemetry import Telemetry

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def readiness(pool: ConnectionPool, stalled: list | None = None) -> tuple[int, dict]:
    """Return the HTTP status and the body of `/readyz` (the web's and the worker's): 503 while
    the database is unreachable or, in a worker, while Kafka partitions are stalled."""
    if not pool.ready():
        return 503, {"status": "database unreachable"}
    if stalled:
        return 503, {"status": "kafka partitions stalled", "partitions": stalled}
    return 200, {"status": "ready"}


class PortInUse(Exception):
    """Another process listens on the port a setting names."""


def start_listening(server: WSGIServer, setting: str) -> None:
    """Start `server`; raise PortInUse naming `setting` when its port is taken."""
    try:
        server.start()
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise _in_use(setting, *server.address[:2]) from None


def bound_socket(host: str, port: int, setting: str) -> socket.socket:
    """Return a TCP socket bound to `host`:`port`, for a server to listen on; raise PortInUse
    naming `setting` when the port is taken."""
    bound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        bound.bind((host, port))
    except OSError as error:
        bound.close()
        if error.errno != errno.EADDRINUSE:
            raise
        raise _in_use(setting, host, port) from None
    return bound


def _in_use(setting: str, host: str, port: int) -> PortInUse:
    return PortInUse(f"{setting}: port {port} on {host} is already in use; choose another "
                     f"(or stop the process holding it)")


class StatusServer:
    """Serve the worker's metrics and health on `port` (0 picks a free port)."""

    def __init__(self, port: int, telemetry: Telemetry, pool: ConnectionPool,
                 stalled: Callable[[], list[str]] = list) -> None:
        self.telemetry = telemetry
        self.pool = pool
        self.stalled = stalled  # names of the Kafka partitions held as undecodable
        self.server = WSGIServer(("0.0.0.0", port), self._app, log=None, error_log=None)

    @property
    def port(self) -> int:
        return self.server.server_port

    def start(self) -> None:
        start_listening(self.server, "WEBHOOKS_METRICS_PORT")

    def stop(self) -> None:
        self.server.stop(timeout=1)

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body, status, kind = self.telemetry.prometheus_text(), "200 OK", PROMETHEUS_TYPE
        elif path == "/healthz":
            body, status, kind = b'{"status":"ok"}', "200 OK", "application/json"
        elif path == "/readyz":
            code, answer = readiness(self.pool, self.stalled())
            body, kind = json.dumps(answer).encode(), "application/json"
            status = "200 OK" if code == 200 else "503 Service Unavailable"
        else:
            body, status, kind = b'{"error":"not found"}', "404 Not Found", "application/json"
        start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
        return [body]

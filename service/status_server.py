"""The worker's small HTTP server: `/metrics` (Prometheus), `/healthz` and `/readyz`."""

from __future__ import annotations

from gevent.pywsgi import WSGIServer

from db.errors import DatabaseError
from db.pool import ConnectionPool
from service.telemetry import Telemetry

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def database_ready(pool: ConnectionPool) -> bool:
    """Return True when the database answers a trivial query."""
    try:
        with pool.transaction() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


class StatusServer:
    """Serve the worker's metrics and health on `port` (0 picks a free port)."""

    def __init__(self, port: int, telemetry: Telemetry, pool: ConnectionPool) -> None:
        self.telemetry = telemetry
        self.pool = pool
        self.server = WSGIServer(("0.0.0.0", port), self._app, log=None, error_log=None)

    @property
    def port(self) -> int:
        return self.server.server_port

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop(timeout=1)

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body, status, kind = self.telemetry.prometheus_text(), "200 OK", PROMETHEUS_TYPE
        elif path == "/healthz":
            body, status, kind = b'{"status":"ok"}', "200 OK", "application/json"
        elif path == "/readyz":
            ready = database_ready(self.pool)
            body = b'{"status":"ready"}' if ready else b'{"status":"database unreachable"}'
            status = "200 OK" if ready else "503 Service Unavailable"
            kind = "application/json"
        else:
            body, status, kind = b'{"error":"not found"}', "404 Not Found", "application/json"
        start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
        return [body]

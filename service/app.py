"""The web application factory: GraphQL API, health checks and metrics."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from db.pool import ConnectionPool
from service.settings import Settings
from service.status_server import PROMETHEUS_TYPE, database_ready
from service.telemetry import Telemetry


def create_app(
    settings: Settings | None = None,
    *,
    pool: ConnectionPool | None = None,
    telemetry: Telemetry | None = None,
) -> Flask:
    """Build the app for `settings` (read from the environment when not given)."""
    settings = settings or Settings.load()
    pool = pool or ConnectionPool(settings.require_database_url(), size=settings.db_pool_size,
                                  application_name="webhooks-web")
    telemetry = telemetry or Telemetry(otlp_endpoint=settings.otlp_endpoint, role="web")
    app = Flask("webhooks")
    app.config.update(WEBHOOKS_SETTINGS=settings, WEBHOOKS_POOL=pool,
                      WEBHOOKS_TELEMETRY=telemetry)

    @app.get("/healthz")
    def healthz():
        return jsonify(status="ok")

    @app.get("/readyz")
    def readyz():
        if database_ready(pool):
            return jsonify(status="ready")
        return jsonify(status="database unreachable"), 503

    @app.get("/metrics")
    def metrics():
        return Response(telemetry.prometheus_text(), content_type=PROMETHEUS_TYPE)

    return app

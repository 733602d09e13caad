"""The web application factory: GraphQL API, ops dashboard, customer portal, health checks and
metrics."""

from __future__ import annotations

import functools

from flask import Flask, Request, Response, jsonify

from db import portal_sessions, tokens
from db.pool import ConnectionPool
from db.scope import NOBODY
from graphql_schema.context import Context, bearer_token
from graphql_schema.portal_api import PORTAL_PATH
from graphql_schema.schema import operations, schema
from graphql_schema.view import GraphQLView
from service.ingest import envelope
from service.runtime.api_context import api_context
from service.runtime.settings import Settings
from service.runtime.status_server import PROMETHEUS_TYPE, readiness
from service.runtime.telemetry import Telemetry
from service.web import dashboard, portal
from service.web.weblog import TOKEN_NAME_KEY

GRAPHQL_BODY_ALLOWANCE = 64 * 1024  # bytes of a /graphql request besides the event payload


def create_app(
    settings: Settings | None = None,
    *,
    pool: ConnectionPool | None = None,
    telemetry: Telemetry | None = None,
) -> Flask:
    """Build the app for `settings` (read from the environment when not given)."""
    settings = settings or Settings.load()
    pool = pool or settings.connection_pool(size=settings.db_pool_size,
                                                     application_name="webhooks-web")
    telemetry = telemetry or Telemetry(otlp_endpoint=settings.otlp_endpoint, role="web")
    app = Flask("webhooks")
    app.config.update(WEBHOOKS_SETTINGS=settings, WEBHOOKS_POOL=pool,
                      WEBHOOKS_TELEMETRY=telemetry)

    read_rejected = functools.partial(envelope.read_again, max_payload=settings.max_payload)

    def graphql_context(request: Request) -> Context:
        token = bearer_token(request.headers.get("Authorization"))
        principal = token and (tokens.authenticate(pool, token)
                               or portal_sessions.authenticate(pool, token))
        if principal:  # for the access log, which names the token, never shows it
            request.environ[TOKEN_NAME_KEY] = principal.name
        return api_context(pool, telemetry, settings,
                           role=principal.role if principal else None,
                           token_name=principal.name if principal else None,
                           scope=principal.scope if principal else NOBODY,
                           tenant_uid=principal.tenant_uid if principal else None,
                           idempotency_key=request.headers.get("Idempotency-Key"),
                           read_rejected=read_rejected, principal=principal or None,
                           portal_url=(settings.public_url or request.host_url.rstrip("/"))
                           + PORTAL_PATH)

    names = operations()
    telemetry.api_operations(names)
    app.add_url_rule("/graphql", view_func=GraphQLView.as_view(
        "graphql", schema=schema, context_for=graphql_context, telemetry=telemetry,
        operations=names, ide_page=dashboard.graphiql_page))
    app.register_blueprint(dashboard.blueprint())
    app.register_blueprint(portal.blueprint(settings.portal_frame_ancestors))
    # A GraphQL body holds at most one payload, JSON-escaped, plus the operation around it.
    app.config["MAX_CONTENT_LENGTH"] = 2 * settings.max_payload + GRAPHQL_BODY_ALLOWANCE

    @app.get("/healthz")
    def healthz():
        return jsonify(status="ok")

    @app.get("/readyz")
    def readyz():
        code, answer = readiness(pool)
        return jsonify(answer), code

    @app.get("/metrics")
    def metrics():
        return Response(telemetry.prometheus_text(), content_type=PROMETHEUS_TYPE)

    return app

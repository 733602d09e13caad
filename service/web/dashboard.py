"""The ops dashboard at `/` and an offline GraphiQL: static pages served from the package.

The dashboard is plain ES modules and CSS under `service/web/static/`, talking only to the
public GraphQL API. GraphiQL's scripts and styles come from the installed
`graphene-django-graphiql-static` distribution (its files only; nothing of Django is
imported), so neither page loads anything from the internet.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from flask import Blueprint, Response, send_from_directory

STATIC_DIR = Path(__file__).with_name("static")
GRAPHIQL_PACKAGE = "graphene_django_graphiql_static"
# Only our own origin: no CDN, no inline script.
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data:; "
                           "style-src 'self'; object-src 'none'; base-uri 'none'; "
                           "frame-ancestors 'none'")


def graphiql_dir() -> Path:
    """Return the folder of GraphiQL's assets inside the installed distribution."""
    spec = importlib.util.find_spec(GRAPHIQL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{GRAPHIQL_PACKAGE} is not installed (a declared dependency)")
    return Path(spec.submodule_search_locations[0]) / "static" / GRAPHIQL_PACKAGE


def blueprint() -> Blueprint:
    """Return the routes of the dashboard (`/`, `/dashboard/…`) and GraphiQL's assets."""
    pages = Blueprint("dashboard", __name__)
    graphiql = graphiql_dir()

    @pages.get("/")
    def index() -> Response:
        return _static("index.html")

    @pages.get("/dashboard/<path:name>")
    def asset(name: str) -> Response:
        return _static(name)

    @pages.get("/graphiql/<path:name>")
    def graphiql_asset(name: str) -> Response:
        response = send_from_directory(graphiql, name, max_age=3600)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    return pages


def graphiql_page() -> Response:
    """Return the GraphiQL page, wired to the local assets."""
    return _static("graphiql.html", policy=False)


def _static(name: str, *, policy: bool = True) -> Response:
    response = send_from_directory(STATIC_DIR, name, max_age=0)
    if name.endswith(".js"):
        response.mimetype = "text/javascript"
    response.headers["X-Content-Type-Options"] = "nosniff"
    if policy:
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response

"""The customer portal at `/portal`: one tenant's self-service page, embedded by a platform in
its own product, served from the package's files (no CDN: it works offline).

The page reads its session token from the address's fragment (never sent to a server), keeps
it in the frame's memory and sessionStorage (no cookie), and talks only to the GraphQL API.
Every response carries a strict Content-Security-Policy: scripts and styles from this origin
only (no inline script or style), requests to this origin only, and the pages allowed to
frame it (`frame-ancestors`) from WEBHOOKS_PORTAL_FRAME_ANCESTORS.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, send_from_directory

from graphql_schema.portal_api import PORTAL_PATH

PORTAL_DIR = Path(__file__).with_name("portal")  # its page, script modules and styles; it
# imports the dashboard's DOM helpers, GraphQL client and health words from /dashboard/


def content_security_policy(frame_ancestors: str) -> str:
    """Return the portal's policy, framed only by `frame_ancestors` (CSP sources)."""
    return ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; "
            f"frame-ancestors {frame_ancestors}")


def blueprint(frame_ancestors: str) -> Blueprint:
    """Return the routes of the portal page (`/portal`) and its assets (`/portal/…`)."""
    pages = Blueprint("portal", __name__)
    policy = content_security_policy(frame_ancestors)

    def served(name: str) -> Response:
        response = send_from_directory(PORTAL_DIR, name, max_age=0)
        if name.endswith(".js"):
            response.mimetype = "text/javascript"
        response.headers["Content-Security-Policy"] = policy
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @pages.get(PORTAL_PATH)
    def page() -> Response:
        return served("index.html")

    @pages.get(f"{PORTAL_PATH}/<path:name>")
    def asset(name: str) -> Response:
        return served(name)

    return pages

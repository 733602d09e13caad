"""The dashboard and GraphiQL pages: served from the package, every asset local and present."""

from __future__ import annotations

import re

from service.web.dashboard import STATIC_DIR

ASSET = re.compile(r"""(?:src|href)="(/[^"]+)"|from "(\.{1,2}/[^"]+)";""")
# Any absolute URL but loopback, the SVG namespace and the placeholder of a form field.
EXTERNAL = re.compile(
    r"https?://(?!127\.0\.0\.1|localhost|www\.w3\.org/2000/svg|example\.com)")


def assets_of(client, path: str, seen: set[str]) -> None:
    """Fetch `path` and, recursively, every local script, style and module it names."""
    if path in seen:
        return
    seen.add(path)
    response = client.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 200, path
    if path.endswith((".js", ".html", "/")) or path == "/graphql":
        text = response.get_data(as_text=True)
        base = path.rsplit("/", 1)[0]
        for absolute, relative in ASSET.findall(text):
            if absolute and not absolute.startswith("/graphql"):
                assets_of(client, absolute, seen)
            elif relative:
                parts = f"{base}/{relative}".split("/")
                resolved: list[str] = []
                for part in parts:
                    if part == "..":
                        resolved.pop()
                    elif part != ".":
                        resolved.append(part)
                assets_of(client, "/".join(resolved), seen)


def test_the_dashboard_is_served_at_the_root_with_its_modules(client):
    page = client.get("/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    seen: set[str] = set()
    assets_of(client, "/", seen)
    assert {"/dashboard/app.js", "/dashboard/api.js", "/dashboard/views/delivery.js",
            "/dashboard/style.css"} <= seen
    assert client.get("/dashboard/app.js").mimetype == "text/javascript"
    assert client.get("/dashboard/missing.js").status_code == 404


def test_graphiql_is_served_from_local_assets(client):
    page = client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert not EXTERNAL.search(text), EXTERNAL.search(text)
    seen: set[str] = set()
    assets_of(client, "/graphql", seen)
    assert {"/graphiql/graphiql.min.js", "/graphiql/react.production.min.js",
            "/graphiql/graphiql.min.css", "/dashboard/graphiql.js"} <= seen


def test_no_asset_of_ours_loads_anything_from_the_internet():
    for path in STATIC_DIR.rglob("*"):
        if path.is_file():
            match = EXTERNAL.search(path.read_text())
            assert match is None, f"{path.name}: {match.group(0)}"

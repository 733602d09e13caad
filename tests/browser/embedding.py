"""A platform's page on another origin (a second local HTTP server) that embeds the portal in an
iframe and keeps every message the portal posts to it (`window.received`)."""

from __future__ import annotations

import html
import urllib.parse

from gevent.pywsgi import WSGIServer

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme's platform</title></head>
<body><h1>Your account</h1>
<script>
window.received = [];
window.addEventListener("message", (event) => window.received.push(event.data));
</script>
<iframe id="portal" title="Webhooks" src="{src}" width="1000" height="{height}"></iframe>
</body></html>"""


class HostPage:
    """`/embed?src=URL&height=PX` on 127.0.0.1:`port`: a page framing URL."""

    def __init__(self, port: int) -> None:
        self.server = WSGIServer(("127.0.0.1", port), self._app, log=None)
        self.server.start()
        self.origin = f"http://127.0.0.1:{port}"

    def embedding(self, src: str, height: int = 1400) -> str:
        """Return the address of the page that frames `src`."""
        query = urllib.parse.urlencode({"src": src, "height": height})
        return f"{self.origin}/embed?{query}"

    def stop(self) -> None:
        self.server.stop(timeout=1)

    def _app(self, environ, start_response):
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        body = PAGE.format(src=html.escape(query.get("src", [""])[0]),
                           height=int(query.get("height", ["1400"])[0])).encode()
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                  ("Content-Length", str(len(body)))])
        return [body]

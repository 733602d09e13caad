"""The logs of `webhooks web`: gunicorn's own lines and its access log as JSON lines.

Passed to gunicorn as `--logger-class service.web.weblog.GunicornLogger`. It is loaded by the
gunicorn arbiter before any worker patches the standard library, so it imports nothing heavy.
"""

from __future__ import annotations

import traceback
from datetime import timedelta
from typing import Any

from gunicorn.glogging import Logger

from service.runtime.logs import JsonFormatter

TOKEN_NAME_KEY = "webhooks.token_name"  # the WSGI environ key the app sets, the access log reads


class GunicornLogger(Logger):
    """gunicorn's logger, writing JSON lines; each request one `access` line."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())

    def access(self, resp: Any, req: Any, environ: dict, request_time: timedelta) -> None:
        if not self.access_log_enabled:
            return
        try:
            self.access_log.info("access", extra=access_fields(resp, environ, request_time))
        except Exception:
            self.error(traceback.format_exc())


def access_fields(resp: Any, environ: dict, request_time: timedelta) -> dict[str, Any]:
    """Return what an access line says of one request: never a header's value, so never a
    token; the token's name when the request was authenticated."""
    status = resp.status
    if isinstance(status, str):
        status = int(status.split(None, 1)[0])
    return {
        "method": environ.get("REQUEST_METHOD"),
        "path": environ.get("PATH_INFO"),
        "status": status,
        "duration_ms": round(request_time.total_seconds() * 1000, 1),
        "token_name": environ.get(TOKEN_NAME_KEY),
        "remote_addr": environ.get("REMOTE_ADDR"),
        "bytes": getattr(resp, "sent", None),
    }


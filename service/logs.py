"""JSON logs, one object per line, with correlation fields and secrets scrubbed."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# Defence in depth: nothing should log a secret or token, but if a message ever carries
# one, the line shows a placeholder instead.
_SECRET = re.compile(r"(whsec_|whk_)[A-Za-z0-9+/=_\-]+")


def scrub(text: str) -> str:
    """Replace anything shaped like a webhook secret or API token."""
    return _SECRET.sub(r"\1[redacted]", text)


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON object: time, level, logger, message and extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return scrub(json.dumps(line, default=str))


def configure(level: str = "info", stream=None) -> None:
    """Send every log record of the process to `stream` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("kafka", "urllib3", "gunicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

"""JSON logs, one object per line, with correlation fields and secrets scrubbed."""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

from db.vocabulary import SECRET_PREFIX, TOKEN_PREFIX

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# Defence in depth: nothing should log a secret or token, but if a message ever carries
# one, the line shows a placeholder instead.
_SECRET = re.compile(rf"({re.escape(SECRET_PREFIX)}|{re.escape(TOKEN_PREFIX)})[A-Za-z0-9+/=_\-]+")


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


# The loggers of the audit trail (every mutation) and of health changes: written at info
# level even when the rest of the log is set quieter.
TRAILS = ("webhooks.audit", "webhooks.health")


def configure(level: str = "info", stream=None) -> None:
    """Send every log record of the process to `stream` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("kafka", "urllib3"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    for trail in TRAILS:  # whatever the level: a quieter log must not lose the audit trail
        logging.getLogger(trail).setLevel(min(logging.INFO, root.level))


def cli_actor() -> str:
    """Name the operator of a command run on this machine, for the audit trail."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name for this uid (a bare container)
        return "cli:unknown"


STDERR = "-"  # the audit log's name for standard error


def audit_file(setting: str | None) -> str:
    """Return where a command's audit lines go: the setting, or the user's state directory
    ($XDG_STATE_HOME, by default ~/.local/state) when it is unset."""
    if setting:
        return setting
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"),
                                                             ".local", "state")
    return os.path.join(state, "webhooks", "audit.log")


@contextlib.contextmanager
def audit_lines(setting: str | None = None) -> Iterator[None]:
    """Append the audit trail's lines, as JSON, to the audit file (`audit_file`) while the
    block runs: a command that changes something leaves its line, as the API does, without
    the rest of the process's logging being set up, and without mixing it into what the
    command says to the person running it. A file that cannot be written is named on stderr
    once, and the lines go to stderr instead: a change never goes unaudited."""
    path = audit_file(setting)
    audit = logging.getLogger("webhooks.audit")
    level = audit.level
    with contextlib.ExitStack() as opened:
        stream = sys.stderr
        if path != STDERR:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                stream = opened.enter_context(open(path, "a", encoding="utf-8"))
            except OSError as error:
                print(f"webhooks: cannot write the audit log {path} ({error.strerror}); its "
                      "lines go to standard error", file=sys.stderr)
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter())
        audit.addHandler(handler)
        audit.setLevel(logging.INFO)
        try:
            yield
        finally:
            audit.removeHandler(handler)
            audit.setLevel(level)

"""Hold a SIGTERM that arrives while a command is still starting up.

Importing the service takes a moment (gevent, psycopg2, Kafka, OpenTelemetry), and a SIGTERM
in that moment would kill the process with the default action (exit 143) although nothing
has started yet. `hold()` runs before those imports and remembers the signal instead; a
command that stops warmly (the worker) asks `received()` once its own handlers are in place,
and every other command calls `release()`, which restores the default action and acts on a
SIGTERM that already came.
"""

from __future__ import annotations

import os
import signal

_state = {"held": False, "received": False}


def hold() -> None:
    """Remember SIGTERM from now on instead of dying of it."""
    _state["held"] = True
    signal.signal(signal.SIGTERM, _remember)


def received() -> bool:
    """Return whether a SIGTERM arrived while it was held."""
    return _state["received"]


def release() -> None:
    """Give SIGTERM its default action back, and act on one that already arrived."""
    if not _state["held"]:
        return
    _state["held"] = False
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _state["received"]:
        os.kill(os.getpid(), signal.SIGTERM)


def _remember(signum: int, frame: object) -> None:
    _state["received"] = True

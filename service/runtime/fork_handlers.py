"""Build OpenTelemetry's objects without the handlers they register for forked children.

OpenTelemetry's providers, readers and span processors register `os.register_at_fork`
handlers that run in every forked child: they start threads and detect resources on a thread
pool. Under gevent those threads are greenlets, and waiting for one switches to the hub, which
then runs the parent's greenlets inside the child, between its fork and its exec: a statement
or a request the parent had under way is finished by the child on the socket they share (seen
as "server closed the connection unexpectedly" in the parent, once the child's copy of a
database connection said goodbye to the server). Our processes fork only to exec another
program, so the handlers have nothing to do in a child; these objects are built without them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def without_fork_handlers() -> Iterator[None]:
    """Within the block, `os.register_at_fork` registers nothing."""
    register = os.register_at_fork
    os.register_at_fork = _register_nothing
    try:
        yield
    finally:
        os.register_at_fork = register


def _register_nothing(**handlers: object) -> None:
    """Take fork handlers and register none of them."""

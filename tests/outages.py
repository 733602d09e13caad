"""Outages of the embedded servers, for tests and the reliability runs (tests/reliability).

PostgreSQL goes down as in a crash and comes back on the same port with its data; the Kafka
broker, which keeps everything in memory, is frozen instead of stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from service.local.kafka import LocalKafka
from service.local.postgres import LocalPostgres


@contextlib.contextmanager
def postgres_down(server: LocalPostgres) -> Iterator[None]:
    """Stop `server` as a crash would (immediate: no checkpoint, crash recovery at the next
    start); start it again on the same port with the same data on the way out."""
    server.stop("immediate")
    try:
        yield
    finally:
        server.start()


@contextlib.contextmanager
def broker_frozen(broker: LocalKafka) -> Iterator[None]:
    """Freeze `broker` (SIGSTOP: connections stay open, nothing answers); thaw it on the way
    out (SIGCONT)."""
    pid = broker.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)

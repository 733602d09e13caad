"""A gevent-safe psycopg2 connection pool that waits for a free connection instead of failing.

psycopg2's own pools raise when exhausted; here a greenlet blocks on a gevent semaphore
until a connection is returned. Connections open lazily, up to `size`. A connection that
failed at the network level is closed and replaced on next use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import gevent.lock
import gevent.queue
import psycopg2
import psycopg2.extensions

from db.errors import DatabaseUnavailable, translated
from db.sql import QUERIES

Connection = psycopg2.extensions.connection
Cursor = psycopg2.extensions.cursor

DEFAULT_CONNECT_TIMEOUT = 5  # seconds to open one connection


def connect(dsn: str, *, autocommit: bool = False, application_name: str = "webhooks") -> Any:
    """Open one connection in UTC, raising DatabaseUnavailable when the server is unreachable."""
    with translated():
        conn = psycopg2.connect(
            dsn,
            connect_timeout=DEFAULT_CONNECT_TIMEOUT,
            application_name=application_name,
            options="-c timezone=UTC",
        )
    conn.autocommit = autocommit
    return conn


@contextlib.contextmanager
def transaction_on(conn: Any) -> Iterator[Any]:
    """Run the block in one transaction on `conn` and yield a cursor.

    Commits when the block ends, rolls back when it raises; the block's own exception
    (a GreenletExit from a kill, say) is never replaced by an error about the connection.
    """
    try:
        with translated(), conn.cursor() as cursor:
            yield cursor
            conn.commit()
    except BaseException:
        if not conn.closed:
            with contextlib.suppress(psycopg2.Error):
                conn.rollback()
        raise


class ConnectionPool:
    """Hand out at most `size` connections to greenlets, blocking when all are in use."""

    def __init__(self, dsn: str, size: int = 10, *, application_name: str = "webhooks") -> None:
        self.dsn = dsn
        self.size = size
        self._application_name = application_name
        self._slots = gevent.lock.BoundedSemaphore(size)
        self._idle: gevent.queue.LifoQueue = gevent.queue.LifoQueue()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """Lend one connection; it goes back to the pool unless it broke."""
        if self._closed:
            raise DatabaseUnavailable("connection pool is closed")
        with self._slots:
            conn = self._take()
            try:
                yield conn
            except BaseException:
                self._discard_or_reset(conn)
                raise
            else:
                self._give_back(conn)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """Run the block in one transaction on a pooled connection and yield its cursor."""
        with self.connection() as conn, transaction_on(conn) as cursor:
            yield cursor

    def execute(self, name: str, params: Any = None) -> list[tuple]:
        """Run the named statement in its own transaction and return its rows (if any)."""
        with self.transaction() as cursor:
            cursor.execute(QUERIES[name], params)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        """Close idle connections; connections in use close when they come back."""
        self._closed = True
        while not self._idle.empty():
            self._idle.get_nowait().close()

    def _take(self) -> Any:
        while not self._idle.empty():
            conn = self._idle.get_nowait()
            if not conn.closed:
                return conn
        return connect(self.dsn, application_name=self._application_name)

    def _give_back(self, conn: Any) -> None:
        if self._closed or conn.closed:
            conn.close()
            return
        if conn.status != psycopg2.extensions.STATUS_READY:
            self._discard_or_reset(conn)
            return
        self._idle.put(conn)

    def _discard_or_reset(self, conn: Any) -> None:
        if not conn.closed:
            try:
                conn.rollback()
            except psycopg2.Error:
                conn.close()
                return
            if not self._closed:
                self._idle.put(conn)
                return
        conn.close()

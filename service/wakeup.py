"""Wake the dispatcher the moment deliveries become due, by LISTEN/NOTIFY.

A dedicated autocommit connection LISTENs; the greenlet sleeps in `wait_read` on its socket
so the rest of the process keeps running. After a reconnect it wakes the dispatcher once,
since notifications sent while disconnected are lost (the poll period covers the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import gevent
import gevent.socket
import psycopg2

from db.errors import DatabaseError
from db.pool import connect

log = logging.getLogger("webhooks.wakeup")

CHANNEL = "webhooks_deliveries_due"  # the channel the SQL of db/queries notifies
KEEPALIVE = 30.0  # seconds without a notification after which the connection is checked
RECONNECT_CAP = 10.0  # seconds, longest pause between reconnection attempts


class DueListener:
    """Call `on_notify` whenever a transaction that made deliveries due commits."""

    def __init__(self, dsn: str, on_notify: Callable[[], None]) -> None:
        self.dsn = dsn
        self.on_notify = on_notify
        self._running = True

    def run(self) -> None:
        failures = 0
        while self._running:
            conn = None
            try:
                conn = connect(self.dsn, autocommit=True, application_name="webhooks-listen")
                with conn.cursor() as cursor:
                    cursor.execute(f"LISTEN {CHANNEL}")
                failures = 0
                self.on_notify()
                self._listen(conn)
            except (DatabaseError, psycopg2.Error, OSError) as error:
                failures += 1
                log.warning("LISTEN connection lost; reconnecting", extra={"error": str(error)})
                gevent.sleep(min(RECONNECT_CAP, 0.2 * 2 ** min(failures, 6)))
            finally:
                if conn is not None:
                    conn.close()

    def stop(self) -> None:
        self._running = False

    def _listen(self, conn) -> None:
        while self._running:
            try:
                gevent.socket.wait_read(conn.fileno(), timeout=KEEPALIVE)
            except TimeoutError:
                with conn.cursor() as cursor:
                    cursor.execute("SELECT 1")
                continue
            conn.poll()
            if conn.notifies:
                conn.notifies.clear()
                self.on_notify()

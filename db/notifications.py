"""Hear what workers must react to at once: deliveries became due, a config changed, a change
was announced to the operational tenant.

The channels are named once, in the database: statements call `notify_deliveries_due()`
(migration 0011), triggers notify `config_changed_channel()` with a config's id when it is
paused, its circuit opens, or it is deactivated, deleted, or given a new endpoint or secret
(migration 0014), and `operational_events_channel()` when an announcement is written
(migration 0033). A listener subscribes to all three on one connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gevent.socket

from db.errors import DatabaseError, DatabaseUnavailable, translated
from db.pool import Pooler, connect
from db.sql import QUERIES


@dataclass(frozen=True)
class Heard:
    """What one wait heard: whether deliveries became due, which configs changed, and whether
    changes were announced."""

    due: bool = False
    changed: frozenset[str] = field(default_factory=frozenset)
    announced: bool = False

    def __bool__(self) -> bool:
        return self.due or bool(self.changed) or self.announced


class NoSession(DatabaseError):
    """The URL reaches a transaction-mode pooler: a LISTEN there would hear nothing."""


class Listener:
    """One autocommit connection subscribed to the three channels.

    Its greenlet waits on the connection's socket, so the rest of the process keeps running.
    Raises DatabaseUnavailable when the connection is lost; open a new listener then
    (notifications sent meanwhile are lost). Raises NoSession when `dsn` reaches PostgreSQL
    through a transaction-mode pooler, which lends each transaction any server session: a
    LISTEN subscribes one of them, whose notifications reach whichever client has it next.
    """

    def __init__(self, dsn: str, pooler: Pooler = Pooler.AUTO) -> None:
        self._conn = connect(dsn, autocommit=True, application_name="webhooks-listen",
                             pooler=pooler)
        if self._conn.pooled:
            self._conn.close()
            raise NoSession("a transaction-mode pooler stands between this URL and PostgreSQL")
        try:
            with translated(), self._conn.cursor() as cursor:
                cursor.execute(QUERIES["listen_for_workers"])
                self._due_channel, self._changed_channel, self._announced_channel = \
                    cursor.fetchone()[:3]
        except BaseException:
            self._conn.close()
            raise

    def wait(self, timeout: float) -> Heard:
        """Wait up to `timeout` seconds; return what was heard meanwhile (falsy: nothing).

        A wait that hears nothing checks that the connection still answers.
        """
        with translated():
            try:
                gevent.socket.wait_read(self._conn.fileno(), timeout=timeout)
            except TimeoutError:
                with self._conn.cursor() as cursor:
                    cursor.execute(QUERIES["ping"])
                return Heard()
            except OSError as error:
                raise DatabaseUnavailable(f"the listening connection failed: {error}") from error
            self._conn.poll()
            notes = list(self._conn.notifies)
            self._conn.notifies.clear()
            return Heard(
                due=any(note.channel == self._due_channel for note in notes),
                changed=frozenset(note.payload for note in notes
                                  if note.channel == self._changed_channel),
                announced=any(note.channel == self._announced_channel for note in notes))

    def close(self) -> None:
        self._conn.close()

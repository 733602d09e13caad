"""Wake the dispatcher the moment deliveries become due, tell it at once when a config
changes, and wake the operational events' relay when a change was announced, by LISTEN/NOTIFY
(db.notifications).

After a reconnect it wakes the dispatcher once, since notifications sent while disconnected
are lost (the poll period covers the rest; the dispatcher finds config changes on its own
within a second). When the URL reaches a transaction-mode pooler, where a LISTEN would hear
nothing, it says so once and ends: the dispatcher then polls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import gevent

from db.errors import DatabaseError
from db.notifications import Listener, NoSession
from db.pool import Pooler
from service.policy.backoff import pause_after

log = logging.getLogger("webhooks.wakeup")

KEEPALIVE = 30.0  # seconds without a notification after which the connection is checked
FIRST_RECONNECT_PAUSE = 0.4  # seconds after the connection is first lost
LONGEST_RECONNECT_PAUSE = 10.0  # seconds between two reconnection attempts, at most


class DueListener:
    """Call `on_notify` whenever a transaction that made deliveries due commits,
    `on_config_changed` with the ids of configs that were paused, opened, deactivated,
    deleted, or given a new endpoint or secret, and `on_announced` when a transaction that
    announced changes to the operational tenant commits."""

    def __init__(self, dsn: str, on_notify: Callable[[], None],
                 on_config_changed: Callable[[frozenset[str]], None] | None = None, *,
                 on_announced: Callable[[], None] | None = None,
                 pooler: Pooler = Pooler.AUTO) -> None:
        self.dsn = dsn
        self.pooler = pooler
        self.on_notify = on_notify
        self.on_config_changed = on_config_changed
        self.on_announced = on_announced
        self._running = True

    def run(self) -> None:
        failures = 0
        while self._running:
            listener = None
            try:
                listener = Listener(self.dsn, self.pooler)
                failures = 0
                self.on_notify()
                if self.on_announced is not None:
                    self.on_announced()
                while self._running:
                    heard = listener.wait(KEEPALIVE)
                    if heard.changed and self.on_config_changed is not None:
                        self.on_config_changed(heard.changed)
                    if heard.due:
                        self.on_notify()
                    if heard.announced and self.on_announced is not None:
                        self.on_announced()
            except NoSession:
                log.warning("no LISTEN: the database URL reaches a transaction-mode pooler; "
                            "new deliveries are found by polling every WEBHOOKS_RETRY_PERIOD "
                            "(set WEBHOOKS_DATABASE_DIRECT_URL to a direct URL to be woken "
                            "at once)")
                return
            except DatabaseError as error:
                failures += 1
                log.warning("LISTEN connection lost; reconnecting", extra={"error": str(error)})
                gevent.sleep(pause_after(failures, first=FIRST_RECONNECT_PAUSE,
                                         cap=LONGEST_RECONNECT_PAUSE))
            finally:
                if listener is not None:
                    listener.close()

    def stop(self) -> None:
        self._running = False

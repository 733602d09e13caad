"""Operational events: publish the changes the database announced (db.operational) as events of
the tenant WEBHOOKS_OPERATIONAL_TENANT names, so that the platform's own endpoint hears them.

At start the worker names that tenant in the database, or says that none hears them (then the
changes announce nothing), and registers the types in the catalog; a uid that no live tenant
has stops the worker before it claims anything. The relay then publishes what was announced
as soon as the announcing transaction's NOTIFY wakes it, or every WEBHOOKS_RETRY_PERIOD.
"""

from __future__ import annotations

import logging

import gevent.event

from db import operational
from db.catalog import CatalogMode
from db.errors import Conflict, DatabaseUnavailable, NotFound, RateLimited
from db.pool import ConnectionPool
from service.runtime.settings import Settings, SettingsError

BATCH = 100  # announcements published in one transaction

log = logging.getLogger("webhooks.operational")


class OperationalRelay:
    """Publishes announced changes to the operational tenant; `wake()` when some were."""

    def __init__(self, pool: ConnectionPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings
        self.tenant_id: int | None = None
        self._woken = gevent.event.Event()

    def prepare(self) -> bool:
        """Name the operational tenant in the database (or none: off) and register the types;
        return whether the relay has anything to do. SettingsError for a uid no live tenant
        has, or a catalog type of the same name that is the platform's own."""
        uid = self.settings.operational_tenant
        if uid is None:
            operational.stop(self.pool)
            return False
        try:
            operational.register_types(self.pool)
            self.tenant_id = operational.point_at(self.pool, uid)
        except NotFound:
            raise SettingsError(f"WEBHOOKS_OPERATIONAL_TENANT: no tenant has the uid {uid!r} "
                                "(create it first, or unset the setting)") from None
        except Conflict as error:
            raise SettingsError(f"WEBHOOKS_OPERATIONAL_TENANT: {error}") from None
        log.info("operational events go to a tenant", extra={"tenant": uid})
        return True

    def wake(self) -> None:
        self._woken.set()

    def run(self) -> None:
        """Publish announcements as they come, until killed; a failure is logged and the
        announcements stay for the next round."""
        while True:
            self._woken.clear()
            pause = self.settings.retry_period
            try:
                if self.relay_once() == BATCH:
                    continue
            except RateLimited as error:  # the operational tenant's own publish rate
                pause = error.retry_after
            except DatabaseUnavailable as error:
                log.warning("could not publish operational events; trying again",
                            extra={"error": str(error)})
            except Exception:
                log.exception("could not publish operational events; trying again")
            self._woken.wait(pause)

    def relay_once(self) -> int:
        """Publish up to a batch of announcements; return how many."""
        assert self.tenant_id is not None, "prepare() names the tenant first"
        return operational.relay(
            self.pool, tenant_id=self.tenant_id, public_url=self.settings.public_url,
            max_payload=self.settings.max_payload,
            strict=self.settings.event_types == CatalogMode.STRICT, limit=BATCH)

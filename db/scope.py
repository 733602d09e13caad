"""Whose data a call may read or change: one tenant's, or the whole platform's.

Every `db/` function that reads or changes a tenant's data takes a Scope as a required
argument, and every statement it runs filters on it (`%(scope_tenant)s`, null for the
platform): a caller that forgets it gets a TypeError, never another tenant's rows. The API
turns a token into its scope once, per request. The worker's claim, record, recovery and
retention are the deliberate exception: they serve every tenant, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The tenant of everything that existed before tenants, and of every call that names none
# (`default_tenant_id()` in the database).
DEFAULT_TENANT_ID = 1
DEFAULT_TENANT_UID = "default"


@dataclass(frozen=True)
class Scope:
    """One tenant's data (`tenant_id`), or every tenant's (`tenant_id` None: the platform)."""

    tenant_id: int | None

    @property
    def is_platform(self) -> bool:
        return self.tenant_id is None

    def owns(self, tenant_id: int) -> bool:
        """Return True when this scope may see the data of tenant `tenant_id`."""
        return self.tenant_id is None or self.tenant_id == tenant_id

    def params(self) -> dict[str, Any]:
        """Return the parameter every scoped statement filters on."""
        return {"scope_tenant": self.tenant_id}


PLATFORM = Scope(None)
DEFAULT_TENANT = Scope(DEFAULT_TENANT_ID)
NOBODY = Scope(0)  # a caller without a valid token: no tenant has the id 0, so it sees nothing

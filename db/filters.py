"""Which deliveries a listing, a count or a bulk replay covers: one filter for all of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.vocabulary import Status


@dataclass(frozen=True)
class DeliveryFilter:
    """Every given field must match; None (or an empty sequence) matches all.

    `replayable_only` keeps the deliveries a replay would change: failed or pending, of a
    config that is active and not deleted.
    """

    config_ids: Sequence[str] | None = None
    statuses: Sequence[Status] | None = None
    event_types: Sequence[str] | None = None
    event_id: str | None = None
    last_status_codes: Sequence[int] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    ordering_key: str | None = None
    webhook_id: str | None = None
    replayable_only: bool = False
    tenant_id: int | None = None  # one tenant's deliveries (the scope narrows them too)

    def params(self) -> dict[str, Any]:
        """Return the parameters of the `delivery_filter` conditions."""
        return {
            **_one_or_many("config_id", "config_ids", self.config_ids),
            **_one_or_many("status", "statuses", self.statuses),
            **_one_or_many("event_type", "event_types", self.event_types),
            "event_id": self.event_id,
            "last_status_codes": list(self.last_status_codes) if self.last_status_codes
            else None,
            "created_after": self.created_after,
            "created_before": self.created_before,
            "ordering_key": self.ordering_key,
            "webhook_id": self.webhook_id,
            "replayable_only": self.replayable_only,
            "tenant": self.tenant_id,
        }


def _one_or_many(one: str, many: str, values: Sequence[str] | None) -> dict[str, Any]:
    """Pass a single value as an equality, several as an array.

    PostgreSQL walks a (column, created_at, id) index in order for `column = value`, not for
    `column = ANY(array)`, even of one element: a page would then sort every match.
    """
    values = list(values or ())
    return {one: values[0] if len(values) == 1 else None,
            many: values if len(values) > 1 else None}

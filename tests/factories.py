"""Factories for configs, events and deliveries, built through the `db/` operations."""

from __future__ import annotations

import itertools
import json
from typing import Any

from db import configs, events
from db.configs import Config
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID

DEFAULT_TYPE = "order.created"


class Factories:
    """Make rows in one test database; `secrets` maps config ids to their secrets."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.secrets: dict[str, str] = {}
        self._numbers = itertools.count(1)

    def config(
        self,
        endpoint: str = "http://127.0.0.1:9/hook",
        event_types: tuple[str, ...] | list[str] = (DEFAULT_TYPE,),
        tenant_id: int = DEFAULT_TENANT_ID,
        **fields: Any,
    ) -> Config:
        config, secret = configs.create(
            self.pool, tenant_id, endpoint=endpoint, event_types=list(event_types), **fields
        )
        self.secrets[config.id] = secret
        return config

    def event(
        self, type: str = DEFAULT_TYPE, payload: Any = None, id: str | None = None,
        tenant_id: int = DEFAULT_TENANT_ID,
    ) -> tuple[str, list[int]]:
        """Publish an event of tenant `tenant_id`; return its id and its delivery ids."""
        event_id = id or f"evt_{next(self._numbers)}"
        payload = {"n": event_id} if payload is None else payload
        event = events.new_event(event_id, type, payload, tenant_id=tenant_id,
                                 max_payload=1024 * 1024)
        return event_id, events.publish(self.pool, event).delivery_ids

    def delivery(self, config: Config | None = None, **state: Any) -> int:
        """Make one delivery (to a new config unless given) and set any columns in `state`."""
        config = config or self.config()
        _, (delivery_id,) = self.event(type=config.event_types[0], tenant_id=config.tenant_id)
        if state:
            self.set(delivery_id, **state)
        return delivery_id

    def set(self, delivery_id: int, **columns: Any) -> None:
        """Overwrite columns of a delivery directly (to stage a state for a test)."""
        assignments = ", ".join(f"{name} = %({name})s" for name in columns)
        with self.pool.transaction() as cursor:
            cursor.execute(
                f"UPDATE deliveries SET {assignments} WHERE id = %(id)s",
                {**columns, "id": delivery_id},
            )

    def row(self, delivery_id: int) -> dict[str, Any]:
        """Return a delivery's row as a dictionary."""
        with self.pool.transaction() as cursor:
            cursor.execute("SELECT * FROM deliveries WHERE id = %s", (delivery_id,))
            names = [column.name for column in cursor.description]
            return dict(zip(names, cursor.fetchone(), strict=True))

    def attempts(self, delivery_id: int) -> list[dict[str, Any]]:
        """Return a delivery's attempts, oldest first."""
        with self.pool.transaction() as cursor:
            cursor.execute(
                "SELECT * FROM delivery_attempts WHERE delivery_id = %s ORDER BY id",
                (delivery_id,),
            )
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def count(self, sql: str, params: Any = None) -> int:
        with self.pool.transaction() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()[0]

    def rows(self, sql: str, params: Any = None) -> list[tuple]:
        """Return every row `sql` selects."""
        with self.pool.transaction() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def column(self, sql: str, params: Any = None) -> list[Any]:
        """Return the first column of every row `sql` selects."""
        return [row[0] for row in self.rows(sql, params)]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))

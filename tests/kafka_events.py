"""What the consumer stored of the messages a test produced."""

from __future__ import annotations

import json


def stored_events(make) -> dict[str, dict]:
    """Return the stored events by id, with what the consumer kept of each message."""
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT id, type, payload::text, occurred_at, message_key, trace_parent, "
                       "trace_state FROM events")
        rows = cursor.fetchall()
    return {row[0]: {"type": row[1], "payload": json.loads(row[2]), "occurred_at": row[3],
                     "key": None if row[4] is None else bytes(row[4]), "trace_parent": row[5],
                     "trace_state": row[6]} for row in rows}


def stored_names(make) -> list[str]:
    """Return the `name` in the payload of every stored event (one per stored message)."""
    return sorted(event["payload"]["name"] for event in stored_events(make).values())

"""The job both peers run, as a Python team would write it without this service.

POST the signed body with `requests`, then record the attempt in PostgreSQL. Used by
bench/peers_celery.py and bench/peers_procrastinate.py; shares nothing with the service.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time

import psycopg2.pool
import requests

SECRET = base64.b64decode("QUJDREVGR0hJSktMTU5PUFFSU1RVVldY")
_session = requests.Session()
_session.mount("http://", requests.adapters.HTTPAdapter(pool_connections=64, pool_maxsize=64))
_pool: psycopg2.pool.ThreadedConnectionPool | None = None

CREATE_TABLE = ("CREATE TABLE IF NOT EXISTS peer_attempts (id bigserial PRIMARY KEY,"
                " delivery_id text NOT NULL, status_code integer NOT NULL,"
                " created_at timestamptz NOT NULL DEFAULT now())")


def _database():
    global _pool
    if _pool is None:
        _pool = psycopg2.pool.ThreadedConnectionPool(1, 64, os.environ["BENCH_PEER_DSN"])
    return _pool


def deliver(delivery_id: str, endpoint: str, body: str) -> int:
    """Sign and POST one webhook, then record the attempt; return the status code."""
    payload = body.encode()
    timestamp = str(int(time.time()))
    digest = hmac.new(SECRET, f"{delivery_id}.{timestamp}.".encode() + payload,
                      hashlib.sha256).digest()
    response = _session.post(endpoint, data=payload, timeout=30, allow_redirects=False, headers={
        "Content-Type": "application/json", "webhook-id": delivery_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    })
    pool = _database()
    conn = pool.getconn()
    try:
        with conn, conn.cursor() as cursor:
            cursor.execute("INSERT INTO peer_attempts (delivery_id, status_code) VALUES (%s, %s)",
                           (delivery_id, response.status_code))
    finally:
        pool.putconn(conn)
    return response.status_code

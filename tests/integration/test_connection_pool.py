"""The connection pool against a server that misbehaves: nothing it does may block for good."""

from __future__ import annotations

import socket

import gevent
import pytest

from db.errors import DatabaseUnavailable
from db.pool import ConnectionPool
from tests.helpers import PATIENCE


def test_a_pool_whose_server_never_answers_raises_instead_of_waiting_for_good():
    """libpq applies connect_timeout to blocking connections only, and under gevent every
    connection is opened asynchronously: the pool bounds the wait itself."""
    listener = socket.socket()  # accepts connections and never says a word: a wedged server
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    pool = ConnectionPool(f"postgresql://webhooks@127.0.0.1:{listener.getsockname()[1]}/w",
                          size=1)
    try:
        with gevent.Timeout(PATIENCE, AssertionError("the connection attempt never ended")), \
                pytest.raises(DatabaseUnavailable, match="no connection to the database within"):
            pool.execute("ping")
    finally:
        listener.close()

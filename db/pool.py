"""A gevent-safe psycopg2 connection pool that waits for a free connection instead of failing.

psycopg2's own pools raise when exhausted; here a greenlet blocks on a gevent semaphore
until a connection is returned. Connections open lazily, up to `size`. A connection that
failed at the network level is closed and replaced on next use.

A connection may reach PostgreSQL through a transaction-mode pooler (PgBouncer as managed
platforms run it), where each transaction may run on another server session: then nothing
may outlive its transaction on the server, so statements are not prepared there. Each
connection knows which it is (`pooled`): said by the setting, or found out as it opens.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

import gevent
import gevent.lock
import gevent.queue
import psycopg2
import psycopg2.extensions

from db.errors import (
    DatabaseError,
    DatabaseReadOnly,
    DatabaseUnavailable,
    InvalidData,
    InvalidInput,
    StatementCancelled,
    translated,
)
from db.rows import as_dicts
from db.sql import NAMES, QUERIES

DEFAULT_CONNECT_TIMEOUT = 5  # seconds to open one connection
# TCP keepalives: a connection whose server vanished without a word (a network partition, a
# host gone) is found dead within about a minute instead of blocking its query for good.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
              "keepalives_count": 3}


class Pooler(StrEnum):
    """What stands between the service and PostgreSQL (WEBHOOKS_DATABASE_POOLER)."""

    NONE = "none"  # nothing: a connection is one server session, as long as it lives
    TRANSACTION = "transaction"  # a transaction-mode pooler: each transaction, any session
    AUTO = "auto"  # found out as each connection opens (`through_pooler`)


class _Connection(psycopg2.extensions.connection):
    """A connection that knows whether a pooler stands in between (`pooled`) and remembers
    the named statements it has prepared (name -> EXECUTE)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pooled = False
        self.prepared: dict[str, str] = {}


class _Cursor(psycopg2.extensions.cursor):
    """A cursor that reports unsendable parameters (NUL, lone surrogates) as InvalidData, and
    names the statement the server cancelled."""

    def execute(self, query: Any, vars: Any = None) -> None:
        try:
            super().execute(query, vars)
        except ValueError as error:
            raise InvalidData(f"cannot send a parameter: {error}") from error
        except psycopg2.errors.QueryCanceled as error:
            name = (NAMES.get(query.removeprefix(FLUSH_LATER) if isinstance(query, str) else query)
                    or _prepared_name(query) or "a statement")
            raise StatementCancelled(f"{name}: {str(error).strip().splitlines()[0]}") from error

    def execute_prepared(self, name: str, params: dict[str, Any], *,
                         flush_later: bool = False) -> None:
        """Run the named statement as a server-side prepared statement of this connection.

        For the statements a worker runs many times a second: PostgreSQL parses and plans
        them once per connection instead of at every run (about a millisecond each for the
        claim and the record). Prepared at first use: the placeholders become $1, $2, ...
        in order of first appearance, each of them cast in the statement (`%(limit)s::integer`)
        so that its type is the one written, never one PostgreSQL guessed.

        Through a transaction-mode pooler (`pooled`) the statement is sent as it is: a
        prepared statement lives in one server session, and the next transaction may run on
        another.

        `flush_later` (autocommit only): the statement's transaction commits without waiting
        for its WAL to reach the disk, so the row locks it took are released at once instead
        of after a disk sync that other workers' statements would queue behind. The caller
        must then call `wait_for_flush()` before acting on the result: together they are as
        durable as a synchronous commit, since nothing is done with an unflushed commit, and
        anything that read it commits after it and so flushes it first.
        """
        execute = QUERIES[name] if self.connection.pooled else self.connection.prepared.get(name)
        if execute is None:
            text, parameters = numbered(QUERIES[name])
            self.execute(f"PREPARE {name} AS {text}")
            arguments = ", ".join(f"%({n})s::{t}" for n, t in parameters)
            execute = self.connection.prepared[name] = f"EXECUTE {name} ({arguments})"
        if flush_later:
            if not self.connection.autocommit:
                raise ValueError("flush_later needs an autocommit connection")
            execute = FLUSH_LATER + execute
        self.execute(execute, params)

    def wait_for_flush(self) -> None:
        """Return once everything committed so far is on disk (see `execute_prepared`).

        `setval` always writes WAL and takes no row lock, so this small transaction commits
        synchronously, flushing the WAL up to its own commit, and waits for no other
        statement. Run on a cursor of its own: this cursor's rows stay readable.
        """
        with self.connection.cursor() as flush:
            flush.execute("SELECT setval('commit_flush', 1)")


# One query, one implicit transaction: the setting ends with it.
FLUSH_LATER = "SET LOCAL synchronous_commit TO off; "
_EXECUTE = re.compile(r"EXECUTE (\w+) \(")


def _prepared_name(query: Any) -> str | None:
    """Return the name of the prepared statement `query` runs, if it runs one."""
    match = _EXECUTE.search(query) if isinstance(query, str) else None
    return match.group(1) if match else None


_PLACEHOLDER = re.compile(r"%\((\w+)\)s(?:::(\w+(?:\[\])?))?")


def numbered(statement: str) -> tuple[str, list[tuple[str, str]]]:
    """Return `statement` with its %(name)s placeholders as $n, and each (name, type) in $n
    order; raise ValueError when a placeholder has no cast or two casts disagree."""
    parameters: dict[str, str] = {}

    def number(match: re.Match) -> str:
        name, type_ = match.groups()
        if type_ is None:
            raise ValueError(f"%({name})s needs a cast (%({name})s::type) to be prepared")
        if parameters.setdefault(name, type_) != type_:
            raise ValueError(f"%({name})s is cast to {parameters[name]} and to {type_}")
        return f"${list(parameters).index(name) + 1}::{type_}"

    text = _PLACEHOLDER.sub(number, statement).replace("%%", "%")
    return text, list(parameters.items())


def connect(dsn: str, *, autocommit: bool = False, application_name: str = "webhooks",
            pooler: Pooler = Pooler.AUTO) -> Any:
    """Open one connection in UTC, raising DatabaseUnavailable when the server is unreachable.

    The timeout is our own: with gevent's wait callback the connection is opened
    asynchronously, and libpq applies `connect_timeout` only to blocking connections. The time
    zone is set once the session has started (a pooler refuses the `options` startup
    parameter), in the same round trip that finds out whether a pooler stands in between.
    """
    timeout = gevent.Timeout(DEFAULT_CONNECT_TIMEOUT, DatabaseUnavailable(
        f"no connection to the database within {DEFAULT_CONNECT_TIMEOUT} s"))
    with translated(), timeout:
        conn = psycopg2.connect(
            dsn,
            connect_timeout=DEFAULT_CONNECT_TIMEOUT,
            application_name=application_name,
            connection_factory=_Connection,
            cursor_factory=_Cursor,
            **KEEPALIVES,
        )
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(QUERIES["start_session"])
                server_pid = cursor.fetchone()[0]
        except BaseException:
            conn.close()
            raise
    conn.pooled = (pooler is Pooler.TRANSACTION
                   or (pooler is Pooler.AUTO and through_pooler(conn, server_pid)))
    conn.autocommit = autocommit
    return conn


def through_pooler(conn: Any, server_pid: int) -> bool:
    """Return True when a pooler answered the connection's start-up, not the server session
    that runs its statements (`server_pid`, that session's pg_backend_pid()).

    At start-up the server tells the client its process id and cancel key (BackendKeyData,
    libpq's backend PID), which a cancel request quotes. A pooler moves its clients between
    server sessions, so it must hand each client a key of its own and map a cancel to the
    session running that client's query at the time: PgBouncer's process id is a random
    number. A relay that only forwards bytes (a TCP forwarder, docker-proxy, a cloud SQL
    proxy, an SSH tunnel) passes the server's own through. Transport does not matter: over
    TCP or a Unix socket, to a pooler or to PostgreSQL, the answer is the same.
    """
    return conn.info.backend_pid != server_pid


@contextlib.contextmanager
def transaction_on(conn: Any) -> Iterator[Any]:
    """Run the block in one transaction on `conn` and yield a cursor.

    Commits when the block ends, rolls back when it raises; the block's own exception
    (a GreenletExit from a kill, say) is never replaced by an error about the connection.
    """
    try:
        with translated(), conn.cursor() as cursor:
            yield cursor
            conn.commit()
    except BaseException:
        if not conn.closed:
            with contextlib.suppress(psycopg2.Error):
                conn.rollback()
        raise


def check_dsn(dsn: str) -> None:
    """Raise InvalidInput unless `dsn` reads as a PostgreSQL URL or key=value string.

    The message never quotes the DSN, which may hold a password.
    """
    try:
        options = psycopg2.extensions.parse_dsn(dsn)
    except psycopg2.ProgrammingError:
        raise InvalidInput("not a PostgreSQL connection string; use "
                           "postgresql://user:password@host:port/dbname") from None
    if not all(port.strip().isdigit() for port in options.get("port", "0").split(",")):
        raise InvalidInput("the port is not a number")


def check_reachable(dsn: str) -> None:
    """Open and close one connection; raise DatabaseUnavailable when the server is not there."""
    connect(dsn, application_name="webhooks-startup").close()


class ConnectionPool:
    """Hand out at most `size` connections to greenlets, blocking when all are in use."""

    def __init__(self, dsn: str, size: int = 10, *, application_name: str = "webhooks",
                 pooler: Pooler = Pooler.AUTO) -> None:
        self.dsn = dsn
        self.size = size
        self.pooler = pooler
        self._application_name = application_name
        self._slots = gevent.lock.BoundedSemaphore(size)
        self._idle: gevent.queue.LifoQueue = gevent.queue.LifoQueue()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """Lend one connection; it goes back to the pool unless it broke."""
        if self._closed:
            raise DatabaseUnavailable("connection pool is closed")
        with self._slots:
            conn = self._take()
            try:
                yield conn
            except DatabaseReadOnly:
                conn.close()  # it may be a session of the old primary: the next one is new
                raise
            except BaseException:
                self._discard_or_reset(conn)
                raise
            else:
                self._give_back(conn)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """Run the block in one transaction on a pooled connection and yield its cursor."""
        with self.connection() as conn, transaction_on(conn) as cursor:
            yield cursor

    @contextlib.contextmanager
    def statement(self) -> Iterator[Any]:
        """Yield a cursor whose each statement is its own transaction (autocommit).

        For a statement that must hold its row locks as briefly as possible: it commits on
        the server as it ends, with no round trip (and no wait for this greenlet to be
        scheduled again) between its last lock and its commit.
        """
        with self.connection() as conn:
            conn.autocommit = True
            try:
                with translated(), conn.cursor() as cursor:
                    yield cursor
            finally:
                if not conn.closed:
                    conn.autocommit = False

    def execute(self, name: str, params: Any = None) -> list[tuple]:
        """Run the named statement in its own transaction and return its rows (if any)."""
        with self.transaction() as cursor:
            cursor.execute(QUERIES[name], params)
            return cursor.fetchall() if cursor.description else []

    def rows(self, name: str, params: Any = None) -> list[dict[str, Any]]:
        """Run the named statement in its own transaction; return its rows by column name."""
        with self.transaction() as cursor:
            cursor.execute(QUERIES[name], params)
            return as_dicts(cursor)

    def ready(self) -> bool:
        """Return True when the database answers a trivial query (readiness checks)."""
        try:
            self.execute("ping")
        except DatabaseError:
            return False
        return True

    def close(self) -> None:
        """Close idle connections; connections in use close when they come back."""
        self._closed = True
        while not self._idle.empty():
            self._idle.get_nowait().close()

    def _take(self) -> Any:
        while not self._idle.empty():
            conn = self._idle.get_nowait()
            if not conn.closed:
                return conn
        return connect(self.dsn, application_name=self._application_name, pooler=self.pooler)

    def _give_back(self, conn: Any) -> None:
        if self._closed or conn.closed:
            conn.close()
            return
        if conn.status != psycopg2.extensions.STATUS_READY:
            self._discard_or_reset(conn)
            return
        self._idle.put(conn)

    def _discard_or_reset(self, conn: Any) -> None:
        if not conn.closed:
            try:
                conn.rollback()
            except psycopg2.Error:
                conn.close()
                return
            if not self._closed:
                self._idle.put(conn)
                return
        conn.close()

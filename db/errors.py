"""The service's own database exceptions; psycopg2's never cross the `db/` boundary."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg2
import psycopg2.errors


class DatabaseError(Exception):
    """A database operation failed."""


class DatabaseUnavailable(DatabaseError):
    """The database cannot be reached or dropped the connection; retrying later may work."""


class DatabaseReadOnly(DatabaseUnavailable):
    """The server accepts no writes now (SQLSTATE 25006), as a primary being failed over;
    the connection is closed: the next one may reach the new primary."""


class StatementCancelled(DatabaseUnavailable):
    """The server cancelled a statement (SQLSTATE 57014: `statement_timeout`, or an
    operator); the message names the statement. Retried a few times at most: the same
    statement may well run as long again."""


class TooManyConnections(DatabaseUnavailable):
    """The server refused a new connection: its connection limit is reached (SQLSTATE 53300)."""


class InvalidData(DatabaseError):
    """The database refused a value as malformed (SQLSTATE class 22); retrying cannot help."""


class UniqueViolation(DatabaseError):
    """A row with the same unique key already exists."""


class Raced(DatabaseError):
    """A concurrent transaction changed what this one counted on; run it again (SQLSTATE
    40001)."""


class NotFound(DatabaseError):
    """The row an operation needs does not exist."""


class NotEligible(DatabaseError):
    """The row exists but is not in a state the operation accepts."""


class Conflict(DatabaseError):
    """The request contradicts an earlier one (e.g. an idempotency key reused)."""


class RateLimited(DatabaseError):
    """A tenant is over its published events per second: nothing was stored; the same call
    fits again in `retry_after` seconds (if nothing else is published meanwhile)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raise psycopg2 errors as the service's own."""
    try:
        yield
    except psycopg2.errors.SerializationFailure as error:
        raise Raced(_message(error)) from error
    except psycopg2.errors.ReadOnlySqlTransaction as error:
        raise DatabaseReadOnly(_message(error)) from error
    except psycopg2.errors.QueryCanceled as error:
        raise StatementCancelled(_message(error)) from error
    except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
        if error.pgcode == TOO_MANY_CONNECTIONS or _is_too_many(_message(error)):
            raise TooManyConnections(
                f"{_message(error)}: the database's connection limit is reached; lower "
                "WEBHOOKS_DB_POOL_SIZE, run fewer processes, or raise the limit (the "
                "connections of every process add up)") from error
        raise DatabaseUnavailable(_message(error)) from error
    except psycopg2.errors.UniqueViolation as error:
        raise UniqueViolation(_message(error)) from error
    except psycopg2.DataError as error:
        raise InvalidData(_message(error)) from error
    except psycopg2.Error as error:
        raise DatabaseError(_message(error)) from error


TOO_MANY_CONNECTIONS = "53300"
# What the server says when it refuses a connection for its limit, before any SQLSTATE reaches
# the client: "sorry, too many clients already", "too many connections for role/database",
# "remaining connection slots are reserved ..."
_TOO_MANY = ("too many clients", "too many connections", "remaining connection slots")


def _is_too_many(message: str) -> bool:
    return any(words in message for words in _TOO_MANY)


def _message(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class InvalidInput(ValueError):
    """A value given to a `db/` operation is malformed; the message says which and why."""

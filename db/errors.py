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


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raise psycopg2 errors as the service's own."""
    try:
        yield
    except psycopg2.errors.SerializationFailure as error:
        raise Raced(_message(error)) from error
    except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
        raise DatabaseUnavailable(_message(error)) from error
    except psycopg2.errors.UniqueViolation as error:
        raise UniqueViolation(_message(error)) from error
    except psycopg2.DataError as error:
        raise InvalidData(_message(error)) from error
    except psycopg2.Error as error:
        raise DatabaseError(_message(error)) from error


def _message(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class InvalidInput(ValueError):
    """A value given to a `db/` operation is malformed; the message says which and why."""

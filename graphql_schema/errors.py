"""Every error the API returns carries `extensions.code`; internals never reach the client.

Resolvers raise the `db/` exceptions (or `api_error`); `coded` turns each error of a result
into what the client sees, and `log_unexpected` logs only what is a fault of ours.
"""

from __future__ import annotations

import logging

from graphql import GraphQLError

from db.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidData,
    InvalidInput,
    NotEligible,
    NotFound,
    RateLimited,
)

NOT_FOUND = "NOT_FOUND"
NOT_ELIGIBLE = "NOT_ELIGIBLE"
IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
BAD_USER_INPUT = "BAD_USER_INPUT"
UNAUTHENTICATED = "UNAUTHENTICATED"
FORBIDDEN = "FORBIDDEN"
RATE_LIMITED = "RATE_LIMITED"  # a tenant over its events per second; `retryAfter` says when
UNAVAILABLE = "UNAVAILABLE"  # the database cannot be reached; retrying later may work
INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"  # a fault of ours, logged with its traceback

EXPECTED = (
    (InvalidInput, BAD_USER_INPUT),
    (InvalidData, BAD_USER_INPUT),  # a value the database refused as malformed
    (NotFound, NOT_FOUND),
    (NotEligible, NOT_ELIGIBLE),
    (Conflict, IDEMPOTENCY_CONFLICT),
    (RateLimited, RATE_LIMITED),
)
UNAVAILABLE_MESSAGE = "the database is unavailable; try again shortly"
INTERNAL_MESSAGE = "internal error; the server log has the details"

log = logging.getLogger("webhooks.api")


def api_error(code: str, message: str) -> GraphQLError:
    """Return an error with `code`, for a resolver to raise."""
    return GraphQLError(message, extensions={"code": code})


def code_of(error: GraphQLError) -> str:
    """Return the code the client sees for `error`."""
    if error.extensions and "code" in error.extensions:
        return error.extensions["code"]
    original = error.original_error
    if error.path is None and (error.locations or original is None
                               or isinstance(original, GraphQLError)):
        return BAD_USER_INPUT  # the document or its variables: syntax, validation, coercion
    return code_for(original)


def code_for(error: BaseException | None) -> str:
    """Return the code the client sees for an exception a resolver raised."""
    if isinstance(error, GraphQLError) and error.extensions and "code" in error.extensions:
        return error.extensions["code"]
    for kind, code in EXPECTED:
        if isinstance(error, kind):
            return code
    if isinstance(error, DatabaseUnavailable):
        return UNAVAILABLE
    return INTERNAL_SERVER_ERROR


def coded(error: GraphQLError) -> GraphQLError:
    """Return `error` as the client may see it: with a code, and masked if it is ours."""
    code = code_of(error)
    message = error.message
    if code == UNAVAILABLE:
        message = UNAVAILABLE_MESSAGE
    elif code == INTERNAL_SERVER_ERROR:
        message = INTERNAL_MESSAGE
    extensions = {**(error.extensions or {}), "code": code}
    if isinstance(error.original_error, RateLimited):
        extensions["retryAfter"] = error.original_error.retry_after
    return GraphQLError(message, nodes=error.nodes, source=error.source,
                        positions=error.positions, path=error.path, extensions=extensions)



def log_unexpected(errors: list[GraphQLError]) -> None:
    """Log the errors that are faults of ours (or an outage), with their tracebacks."""
    for error in errors:
        code = code_of(error)
        if code == INTERNAL_SERVER_ERROR:
            log.error("unexpected error in the GraphQL API: %s", error.message,
                      exc_info=error.original_error or error, extra={"path": error.path})
        elif code == UNAVAILABLE:
            log.warning("database unavailable for the GraphQL API",
                        extra={"error": error.message, "path": error.path})


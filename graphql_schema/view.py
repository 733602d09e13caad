"""`/graphql` over HTTP: GraphiQL on GET, and operations only for callers with a valid token.

Every failure, including the ones that happen before the schema runs (no token, malformed
request, database down), answers with a GraphQL-shaped JSON body whose errors carry a code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Request, Response, request
from strawberry.flask.views import GraphQLView as StrawberryView
from strawberry.flask.views import HTTPException as StrawberryHTTPException
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult
from werkzeug.exceptions import HTTPException as WerkzeugHTTPException

from db.errors import DatabaseError, DatabaseUnavailable
from graphql_schema.context import Context
from graphql_schema.errors import (
    BAD_USER_INPUT,
    INTERNAL_MESSAGE,
    INTERNAL_SERVER_ERROR,
    UNAUTHENTICATED,
    UNAVAILABLE,
    UNAVAILABLE_MESSAGE,
    coded,
    log,
)

MAX_JSON_DEPTH = 128  # nesting of a request's JSON (a payload nests 3 levels below the top)
UNAUTHENTICATED_MESSAGE = (
    "send a valid token: Authorization: Bearer <token> (missing, unknown or revoked)"
)


class Unauthenticated(Exception):
    """The request carries no valid token."""


class GraphQLView(StrawberryView):
    """Strawberry's Flask view with our context, access check and error codes."""

    def __init__(self, schema: Any, *, context_for: Callable[[Request], Context],
                 **options: Any) -> None:
        super().__init__(schema, **options)
        self._context_for = context_for

    def decode_json(self, data: str | bytes) -> object:
        """Decode a request's JSON, raw newlines in strings allowed (as `curl -d '…'` sends)."""
        too_deep_message = f"the request's JSON nests more than {MAX_JSON_DEPTH} levels"
        try:
            value = json.loads(data, strict=False)
        except RecursionError:
            raise StrawberryHTTPException(400, too_deep_message) from None
        if not isinstance(value, (dict, list)):
            raise StrawberryHTTPException(400, "the request's JSON must be an object")
        if too_deep(value, MAX_JSON_DEPTH):
            raise StrawberryHTTPException(400, too_deep_message)
        return value

    def get_context(self, request: Request, response: Response) -> Context:
        return self._context_for(request)

    def execute_operation(self, request: Request, context: Context, root_value: Any,
                          sub_response: Response) -> Any:
        if context.role is None:
            raise Unauthenticated
        return super().execute_operation(request, context, root_value, sub_response)

    def process_result(self, request: Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = [coded(error) for error in result.errors]
        return super().process_result(request, result)

    def dispatch_request(self) -> Response:
        try:
            return self.run(request=request)
        except Unauthenticated:
            response = failure(401, UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        except StrawberryHTTPException as error:
            return failure(error.status_code, BAD_USER_INPUT, error.reason)
        except WerkzeugHTTPException as error:
            return failure(error.code or 400, BAD_USER_INPUT, error.description or error.name)
        except DatabaseUnavailable as error:
            log.warning("database unavailable for the GraphQL API", extra={"error": str(error)})
            return failure(503, UNAVAILABLE, UNAVAILABLE_MESSAGE)
        except DatabaseError:
            log.exception("database error in the GraphQL view")
            return failure(500, INTERNAL_SERVER_ERROR, INTERNAL_MESSAGE)


def failure(status: int, code: str, message: str) -> Response:
    """Return a GraphQL-shaped error response for a request the schema did not run."""
    body = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return Response(json.dumps(body), status=status, content_type="application/json")


def too_deep(value: object, limit: int) -> bool:
    """Return whether lists and objects nest more than `limit` levels in `value`."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in children
                           if isinstance(child, (dict, list)))
    return False

"""`/graphql` over HTTP: GraphiQL on GET, and operations only for callers with a valid token.

Every failure, including the ones that happen before the schema runs (no token, malformed
request, database down), answers with a GraphQL-shaped JSON body whose errors carry a code.
Each request is counted by operation (its first root field) and outcome, with its duration.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Request, Response, g, request
from strawberry.flask.views import GraphQLView as StrawberryView
from strawberry.flask.views import HTTPException as StrawberryHTTPException
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult
from werkzeug.exceptions import HTTPException as WerkzeugHTTPException

from db.errors import DatabaseError, DatabaseUnavailable
from graphql_schema import audit
from graphql_schema.context import Context, Observed, Telemetry
from graphql_schema.errors import (
    BAD_USER_INPUT,
    INTERNAL_MESSAGE,
    INTERNAL_SERVER_ERROR,
    RATE_LIMITED,
    UNAUTHENTICATED,
    UNAVAILABLE,
    UNAVAILABLE_MESSAGE,
    coded,
    log,
)
from graphql_schema.schema import NO_OPERATION, requested_mutations

MAX_JSON_DEPTH = 128  # nesting of a request's JSON (a payload nests 3 levels below the top)
UNAUTHENTICATED_MESSAGE = (
    "send a valid token: Authorization: Bearer <token> (missing, unknown, expired or revoked)"
)


class Unauthenticated(Exception):
    """The request carries no valid token."""


class GraphQLView(StrawberryView):
    """Strawberry's Flask view with our context, access check and error codes."""

    def __init__(self, schema: Any, *, context_for: Callable[[Request], Context],
                 telemetry: Telemetry, operations: Iterable[str],
                 ide_page: Callable[[], Response] | None = None, **options: Any) -> None:
        super().__init__(schema, **options)
        self._context_for = context_for
        self._telemetry = telemetry
        self._operations = frozenset(operations)
        self._ide_page = ide_page

    def render_graphql_ide(self, request: Request) -> Response:
        """Serve the given GraphiQL page (one whose assets are local), else strawberry's."""
        if self._ide_page is not None:
            return self._ide_page()
        return super().render_graphql_ide(request)

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
        g.graphql_observed = (context := self._context_for(request)).observed
        return context

    def execute_operation(self, request: Request, context: Context, root_value: Any,
                          sub_response: Response) -> Any:
        if context.role is None:
            for mutation in self._requested_mutations(request):
                audit.refused(mutation, UNAUTHENTICATED)
            raise Unauthenticated
        return super().execute_operation(request, context, root_value, sub_response)

    def _requested_mutations(self, request: Request) -> list[str]:
        """Return the mutations a request asks for, as far as its body can be read."""
        try:
            body = self.parse_http_body(self.request_adapter_class(request))
        except (StrawberryHTTPException, ValueError):
            return []  # refused as unauthenticated all the same
        return [mutation for data in (body if isinstance(body, list) else [body])
                for mutation in requested_mutations(data.query, data.operation_name)]

    def process_result(self, request: Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = [coded(error) for error in result.errors]
            g.graphql_observed.codes.extend(error.extensions["code"] for error in result.errors)
        return super().process_result(request, result)

    def create_response(self, response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
                        sub_response: Response) -> Response:
        """Answer 429 with `Retry-After` (whole seconds, rounded up) when every error of the
        request is RATE_LIMITED; every other answer keeps its status."""
        seconds = retry_after(response_data)
        if seconds is not None:
            sub_response.status_code = 429
            sub_response.headers["Retry-After"] = str(max(1, math.ceil(seconds)))
        return super().create_response(response_data, sub_response)

    def dispatch_request(self) -> Response | str:
        started = time.perf_counter()
        g.graphql_observed = Observed()
        response = self._respond()
        observed: Observed = g.graphql_observed
        operation = observed.operation if observed.operation in self._operations else None
        status = getattr(response, "status_code", 200)  # GraphiQL's page comes as text
        self._telemetry.api_request(operation or NO_OPERATION, outcome(status, observed.codes),
                                    time.perf_counter() - started)
        return response

    def _respond(self) -> Response | str:
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


def outcome(status: int, codes: Iterable[str]) -> str:
    """Return how a request ended for the metrics: ok, client_error or server_error."""
    codes = set(codes)
    if status >= 500 or codes & {INTERNAL_SERVER_ERROR, UNAVAILABLE}:
        return "server_error"
    if status >= 400 or codes:
        return "client_error"
    return "ok"


def failure(status: int, code: str, message: str) -> Response:
    """Return a GraphQL-shaped error response for a request the schema did not run."""
    body = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return Response(json.dumps(body), status=status, content_type="application/json")


def retry_after(response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse]
                ) -> float | None:
    """Return the longest `retryAfter` of a response's errors when every one is RATE_LIMITED
    (None when there are none, or others)."""
    results = response_data if isinstance(response_data, list) else [response_data]
    extensions = [error.get("extensions") or {}
                  for result in results for error in result.get("errors") or ()]
    if not extensions or any(e.get("code") != RATE_LIMITED for e in extensions):
        return None
    return max(e["retryAfter"] for e in extensions)


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

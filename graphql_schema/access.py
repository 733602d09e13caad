"""Roles: a `viewer` token may query; an `operator` token may also mutate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry
from strawberry.permission import BasePermission

from graphql_schema import audit
from graphql_schema.errors import FORBIDDEN, UNAUTHENTICATED, api_error


class OperatorOnly(BasePermission):
    """Allow the field to operator tokens only; a refusal is audited too."""

    message = "this needs an operator token; yours is a viewer token"
    error_extensions = {"code": FORBIDDEN}

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        role = info.context.role
        if role is None:
            audit.record(info, kwargs.get("id"), None, UNAUTHENTICATED)
            raise api_error(UNAUTHENTICATED, "send a token: Authorization: Bearer <token>")
        if role != "operator":
            audit.record(info, kwargs.get("id"), None, FORBIDDEN)
            return False
        return True


def operator_mutation(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Declare a mutation that needs an operator token and leaves an audit line."""

    def declare(resolver: Callable[..., Any]) -> Any:
        return strawberry.mutation(permission_classes=[OperatorOnly], **options)(
            audit.audited(resolver))

    return declare

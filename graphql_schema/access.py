"""Roles: a `viewer` token may query; an `operator` token may also mutate."""

from __future__ import annotations

import functools
from typing import Any

import strawberry
from strawberry.permission import BasePermission

from graphql_schema.errors import FORBIDDEN, UNAUTHENTICATED, api_error


class OperatorOnly(BasePermission):
    """Allow the field to operator tokens only."""

    message = "this needs an operator token; yours is a viewer token"
    error_extensions = {"code": FORBIDDEN}

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        role = info.context.role
        if role is None:
            raise api_error(UNAUTHENTICATED, "send a token: Authorization: Bearer <token>")
        return role == "operator"


operator_mutation = functools.partial(strawberry.mutation, permission_classes=[OperatorOnly])

"""Roles: a `viewer` token may query; an `operator` token may also mutate. Reach: a token acts
for the whole platform or for one tenant; some fields are the platform's only."""

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


PLATFORM_ONLY = ("this needs a platform-wide token; yours acts for one tenant (tenants, "
                 "tokens, rejected events and the platform's stats are the platform's)")


class PlatformOnly(BasePermission):
    """Allow the field to platform-wide tokens only; a tenant token is FORBIDDEN (the field
    is the platform's, not another tenant's object, so refusing it reveals nothing)."""

    message = PLATFORM_ONLY
    error_extensions = {"code": FORBIDDEN}

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        if info.context.scope.is_platform:
            return True
        audit.record(info, kwargs.get("id") or kwargs.get("uid"), None, FORBIDDEN)
        return False


def operator_mutation(*, platform: bool = False,
                      **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Declare a mutation that needs an operator token (acting for the whole platform when
    `platform`) and leaves an audit line."""
    permissions = [OperatorOnly, PlatformOnly] if platform else [OperatorOnly]

    def declare(resolver: Callable[..., Any]) -> Any:
        return strawberry.mutation(permission_classes=permissions, **options)(
            audit.audited(resolver))

    return declare

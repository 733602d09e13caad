"""Roles: a `viewer` token may query; an `operator` token may also mutate. Reach: a token acts
for the whole platform or for one tenant; some fields are the platform's only. A portal
session acts for one tenant too, and does only what its capabilities name: every mutation a
tenant may run declares the capability it needs (none declared: no session may run it), and
every query needs READ."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.permission import BasePermission
from strawberry.types.graphql import OperationType

from db.vocabulary import PortalCapability
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


class SessionCapable(BasePermission):
    """Allow the field to API tokens (their role decides) and to the portal sessions granted
    `capability`; a refusal is audited. Made for each capability by `needs`."""

    capability: ClassVar[PortalCapability]
    error_extensions = {"code": FORBIDDEN}

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        granted = info.context.capabilities
        if granted is None or self.capability in granted:
            return True
        audit.record(info, kwargs.get("id"), None, FORBIDDEN)
        return False


def refusal(capability: PortalCapability) -> str:
    """Say why a portal session without `capability` is refused."""
    return (f"this portal session may not do this: it was not granted "
            f"{capability.name} (its platform grants the capabilities)")


def needs(capability: PortalCapability) -> type[BasePermission]:
    """Return the permission that asks a portal session for `capability`."""
    return type(f"Needs{capability.name.title().replace('_', '')}", (SessionCapable,),
                {"capability": capability, "message": refusal(capability)})


class SessionReads(SchemaExtension):
    """Refuse a query to a portal session without READ (FORBIDDEN, before anything runs)."""

    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        granted = getattr(execution.context, "capabilities", None)
        if granted is not None and PortalCapability.READ not in granted \
                and execution.operation_type == OperationType.QUERY:
            raise api_error(FORBIDDEN, refusal(PortalCapability.READ))
        yield


def operator_mutation(*, platform: bool = False, capability: PortalCapability | None = None,
                      **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Declare a mutation that needs an operator token (acting for the whole platform when
    `platform`) and leaves an audit line; a tenant's mutation names the `capability` a portal
    session needs for it."""
    if platform == (capability is not None):
        raise TypeError("a mutation is the platform's, or names the capability a portal "
                        "session needs for it")
    permissions = [OperatorOnly, PlatformOnly] if platform else [needs(capability), OperatorOnly]

    def declare(resolver: Callable[..., Any]) -> Any:
        return strawberry.mutation(permission_classes=permissions, **options)(
            audit.audited(resolver))

    return declare

"""Cursor-paginated listings: `edges { cursor node }` and `pageInfo { hasNextPage endCursor }`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import strawberry

from db.errors import InvalidInput
from graphql_schema.types import Config, DeliverySummary, RejectedEvent

DEFAULT_PAGE = 100
MAX_PAGE = 1000

Row = TypeVar("Row")


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None = strawberry.field(
        description="Pass as `after` to get the next page; null on an empty page.")


@strawberry.type
class DeliveryEdge:
    cursor: str
    node: DeliverySummary


@strawberry.type(description="Deliveries, newest first.")
class DeliveryConnection:
    edges: list[DeliveryEdge]
    page_info: PageInfo


@strawberry.type
class ConfigEdge:
    cursor: str
    node: Config


@strawberry.type(description="Configs, newest first.")
class ConfigConnection:
    edges: list[ConfigEdge]
    page_info: PageInfo


@strawberry.type
class RejectedEventEdge:
    cursor: str
    node: RejectedEvent


@strawberry.type(description="Rejected broker messages, newest first.")
class RejectedEventConnection:
    edges: list[RejectedEventEdge]
    page_info: PageInfo


def page_size(first: int | None) -> int:
    """Return `first` (the default when null) if it is a valid page size, else raise."""
    if first is None:
        return DEFAULT_PAGE
    if not 1 <= first <= MAX_PAGE:
        raise InvalidInput(f"first: must be between 1 and {MAX_PAGE}, not {first}")
    return first


def connection(
    kind: Any, edge: Any, rows: Sequence[Row], first: int,
    cursor_of: Callable[[Row], str], node_of: Callable[[Row], Any],
) -> Any:
    """Build a `kind` connection of `edge`s from up to `first + 1` rows (one more: a next page)."""
    edges = [edge(cursor=cursor_of(row), node=node_of(row)) for row in rows[:first]]
    return kind(
        edges=edges,
        page_info=PageInfo(has_next_page=len(rows) > first,
                           end_cursor=edges[-1].cursor if edges else None),
    )

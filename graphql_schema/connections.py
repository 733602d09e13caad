"""Cursor-paginated listings: `edges { cursor node }` and `pageInfo { hasNextPage endCursor }`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import strawberry

from db.errors import InvalidInput
from graphql_schema.types import Config, DeliverySummary, RejectedEvent

DEFAULT_PAGE = 100
MAX_PAGE = 1000
COUNT_BOUND = 10_000  # rows counted exactly before totalCount becomes an estimate

Row = TypeVar("Row")


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None = strawberry.field(
        description="Pass as `after` to get the next page; null on an empty page.")
    has_previous_page: bool = strawberry.field(
        default=False, description="Whether rows come before this page (where `before` works).")
    start_cursor: str | None = strawberry.field(
        default=None, description="Pass as `before` to get the previous page.")


@strawberry.type
class DeliveryEdge:
    cursor: str
    node: DeliverySummary


@strawberry.type(description="Deliveries in the order asked for (newest first by default).")
class DeliveryConnection:
    edges: list[DeliveryEdge]
    page_info: PageInfo
    count: strawberry.Private[Callable[[], tuple[int, bool]]]

    @strawberry.field(description=f"Deliveries the filter matches: exact up to "
                                  f"{COUNT_BOUND:,}, past that the planner's estimate "
                                  "(totalCountIsExact says which).")
    def total_count(self) -> int:
        return self.count()[0]

    @strawberry.field(description="False when totalCount is an estimate.")
    def total_count_is_exact(self) -> bool:
        return self.count()[1]


@strawberry.type
class ConfigEdge:
    cursor: str
    node: Config


@strawberry.type(description="Configs, newest first.")
class ConfigConnection:
    edges: list[ConfigEdge]
    page_info: PageInfo
    count: strawberry.Private[Callable[[], tuple[int, bool]]]

    @strawberry.field(description=f"Configs the filter matches: exact up to {COUNT_BOUND:,}, "
                                  "past that the planner's estimate (totalCountIsExact says "
                                  "which).")
    def total_count(self) -> int:
        return self.count()[0]

    @strawberry.field(description="False when totalCount is an estimate.")
    def total_count_is_exact(self) -> bool:
        return self.count()[1]


@strawberry.type
class RejectedEventEdge:
    cursor: str
    node: RejectedEvent


@strawberry.type(description="Rejected broker messages, newest first.")
class RejectedEventConnection:
    edges: list[RejectedEventEdge]
    page_info: PageInfo
    count: strawberry.Private[Callable[[], int]]

    @strawberry.field(description="Rejected broker messages in all (an exact count).")
    def total_count(self) -> int:
        return self.count()


def page_size(first: int | None, argument: str = "first") -> int:
    """Return `first` (the default when null) if it is a valid page size, else raise."""
    if first is None:
        return DEFAULT_PAGE
    if not 1 <= first <= MAX_PAGE:
        raise InvalidInput(f"{argument}: must be between 1 and {MAX_PAGE}, not {first}")
    return first


def connection(
    kind: Any, edge: Any, rows: Sequence[Row], first: int,
    cursor_of: Callable[[Row], str], node_of: Callable[[Row], Any],
    *, from_cursor: bool = False, backwards: bool = False, **fields: Any,
) -> Any:
    """Build a `kind` connection of `edge`s from up to `first + 1` rows (one more: a next page).

    `backwards` rows were read from a `before` cursor towards the start, nearest first;
    `from_cursor` says whether the page started at a cursor (so rows lie on its other side).
    """
    more = len(rows) > first
    page = list(reversed(rows[:first])) if backwards else rows[:first]
    edges = [edge(cursor=cursor_of(row), node=node_of(row)) for row in page]
    return kind(
        edges=edges,
        page_info=PageInfo(has_next_page=from_cursor if backwards else more,
                           end_cursor=edges[-1].cursor if edges else None,
                           has_previous_page=more if backwards else from_cursor,
                           start_cursor=edges[0].cursor if edges else None),
        **fields,
    )

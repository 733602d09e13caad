"""Config filters through the API: what a config's filter kept from it, and `testFilter`,
which says whether a filter lets a payload through and why (the portal's "test against this
example"), by the same rules the fan-out applies."""

from __future__ import annotations

import json
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from db import event_filter
from db.config_filters import FilterCount
from db.errors import InvalidInput
from graphql_schema.context import Info

GRAPHQL_INT_MAX = 2**31 - 1  # GraphQL's Int is 32 bits


@strawberry.type(description="What a config's filter kept from it: the events of its types "
                             "that the filter rejected (no delivery was created for them).")
class FilterStats:
    filtered_out: int = strawberry.field(description=(
        "Events its filter rejected since the config was created (an event stored again "
        f"counts once); at most {GRAPHQL_INT_MAX:,}."))
    last_filtered_out_at: datetime | None = strawberry.field(
        description="When its filter last rejected one; null: never.")

    @classmethod
    def from_row(cls, row: FilterCount) -> FilterStats:
        return cls(filtered_out=min(row.filtered_out, GRAPHQL_INT_MAX),
                   last_filtered_out_at=row.last_filtered_out_at)


@strawberry.type(description="Whether a filter lets an event with a payload through, and why.")
class FilterTest:
    matched: bool = strawberry.field(description="True: a config with this filter gets a "
                                                 "delivery of such an event.")
    reason: str = strawberry.field(description="The conditions that decided it, with the "
                                               "values found at their paths.")


@strawberry.type
class FilterQueries:
    @strawberry.field(description="Test a config filter against a payload (e.g. an example of "
                                  "the catalog), by the rules the fan-out applies: "
                                  "BAD_USER_INPUT, naming the place, for a filter a config "
                                  "could not have.")
    def test_filter(self, info: Info, filter: JSON, payload: JSON) -> FilterTest:
        checked = event_filter.check(filter)
        size = len(json.dumps(payload, separators=(",", ":"), allow_nan=False))
        if size > info.context.max_payload:
            raise InvalidInput(f"payload: {size} bytes is over the limit of "
                               f"{info.context.max_payload} bytes")
        verdict = checked.explain(payload)
        return FilterTest(matched=verdict.matched, reason=verdict.reason)

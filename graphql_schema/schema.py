"""The schema: queries, mutations and the limits that keep any one request cheap.

`python -m graphql_schema.schema` rewrites the committed `schema.graphql` from this code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import AddValidationRules, MaxTokensLimiter

from graphql_schema.errors import log_unexpected
from graphql_schema.limits import DocumentLimits
from graphql_schema.mutations import Mutation
from graphql_schema.queries import Query

MAX_TOKENS = 10_000  # lexical tokens in one document; pass large payloads as variables
SCHEMA_FILE = Path(__file__).with_name("schema.graphql")


class Schema(strawberry.Schema):
    """A strawberry schema that logs only the errors that are faults of ours."""

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        log_unexpected(errors)


schema = Schema(
    query=Query,
    mutation=Mutation,
    extensions=[
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: AddValidationRules([DocumentLimits]),  # depth and aliases; see limits.py
    ],
)


def sdl() -> str:
    """Return the schema in the GraphQL schema language, as committed in `schema.graphql`."""
    return schema.as_str() + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(sdl())
    print(f"wrote {SCHEMA_FILE}")

"""The schema: queries, mutations and the limits that keep any one request cheap.

`python -m graphql_schema.schema` rewrites the committed `schema.graphql` from this code.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import strawberry
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    build_schema,
    get_operation_ast,
    parse,
)
from strawberry.extensions import AddValidationRules, MaxTokensLimiter, SchemaExtension
from strawberry.schema.config import StrawberryConfig

from graphql_schema.access import SessionReads
from graphql_schema.errors import log_unexpected
from graphql_schema.limits import DocumentLimits
from graphql_schema.mutations import Mutation
from graphql_schema.queries import Query
from graphql_schema.scalars import DateTime

MAX_TOKENS = 10_000  # lexical tokens in one document; pass large payloads as variables
SCHEMA_FILE = Path(__file__).with_name("schema.graphql")
NO_OPERATION = "none"  # the metrics label of a request that runs no root field of the schema


class Schema(strawberry.Schema):
    """A strawberry schema that logs only the errors that are faults of ours."""

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        log_unexpected(errors)


class NameTheOperation(SchemaExtension):
    """Note the first root field of the operation run, the `operation` of the API metrics."""

    def on_operation(self) -> Iterator[None]:
        yield
        execution = self.execution_context
        observed = getattr(execution.context, "observed", None)
        if observed is not None and execution.graphql_document is not None:
            observed.operation = root_field(execution.graphql_document,
                                            execution.operation_name)


def root_field(document: DocumentNode, operation_name: str | None) -> str | None:
    """Return the first root field the named (or only) operation of `document` selects."""
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode) and (
                operation_name is None or (definition.name and
                                           definition.name.value == operation_name)):
            first = definition.selection_set.selections[0]
            return first.name.value if isinstance(first, FieldNode) else None
    return None


schema = Schema(
    query=Query,
    mutation=Mutation,
    config=StrawberryConfig(scalar_map={datetime: DateTime}),
    extensions=[
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: AddValidationRules([DocumentLimits]),  # depth and aliases; see limits.py
        NameTheOperation,
        SessionReads,
    ],
)


@functools.cache
def _built() -> GraphQLSchema:
    return build_schema(schema.as_str())


@functools.cache
def operations() -> tuple[str, ...]:
    """Return every root field of the schema, then NO_OPERATION: the metrics' label values."""
    built = _built()
    names = [name for root in (built.query_type, built.mutation_type) if root
             for name in root.fields]
    return (*names, NO_OPERATION)


@functools.cache
def mutations() -> tuple[str, ...]:
    """Return the name of every mutation of the schema."""
    return tuple(_built().mutation_type.fields)


def requested_mutations(query: str | None, operation_name: str | None) -> list[str]:
    """Return the mutations of the schema that the named (or only) operation of `query` asks
    for, in order; none when it is not a mutation or does not parse."""
    try:
        document = parse(query, max_tokens=MAX_TOKENS) if isinstance(query, str) else None
    except GraphQLError:
        return []
    operation = document and get_operation_ast(document, operation_name)
    if operation is None or operation.operation != OperationType.MUTATION:
        return []
    fragments = {definition.name.value: definition for definition in document.definitions
                 if isinstance(definition, FragmentDefinitionNode)}
    known = set(mutations())
    return [name for name in _field_names(operation.selection_set, fragments, set())
            if name in known]


def _field_names(selections: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode],
                 spread: set[str]) -> Iterator[str]:
    """Yield the names of the fields `selections` selects, fragments included (each once)."""
    for selection in selections.selections:
        if isinstance(selection, FieldNode):
            yield selection.name.value
        elif isinstance(selection, InlineFragmentNode):
            yield from _field_names(selection.selection_set, fragments, spread)
        elif isinstance(selection, FragmentSpreadNode) and selection.name.value in fragments \
                and selection.name.value not in spread:
            spread.add(selection.name.value)
            yield from _field_names(fragments[selection.name.value].selection_set, fragments,
                                    spread)


def sdl() -> str:
    """Return the schema in the GraphQL schema language, as committed in `schema.graphql`."""
    return schema.as_str() + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(sdl())
    print(f"wrote {SCHEMA_FILE}")

"""Limit the depth and the aliases of an operation, in time linear in the document's size.

strawberry's QueryDepthLimiter and MaxAliasesLimiter walk a fragment again at every spread,
so a document of 25 fragments that each spread the next one twice keeps them busy for
minutes (measured: 2^25 walks). Here each fragment is measured once and its numbers reused.
Introspection fields are skipped, as strawberry does; graphql-core bounds their depth itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    Node,
    OperationDefinitionNode,
    ValidationContext,
    ValidationRule,
)

MAX_DEPTH = 10  # nested fields in one operation
MAX_ALIASES = 30  # aliased fields in one operation, counted once per use of a fragment


@dataclass(frozen=True)
class Size:
    depth: int = 0
    aliases: int = 0


class DocumentLimits(ValidationRule):
    """Report every operation deeper than MAX_DEPTH or with more than MAX_ALIASES aliases."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        definitions = context.document.definitions
        self.fragments = {definition.name.value: definition for definition in definitions
                          if isinstance(definition, FragmentDefinitionNode)}
        self.sizes: dict[str, Size] = {}
        for definition in definitions:
            if not isinstance(definition, OperationDefinitionNode):
                continue
            size = self.measure(definition, frozenset())
            name = definition.name.value if definition.name else "the operation"
            if size.depth > MAX_DEPTH:
                context.report_error(GraphQLError(
                    f"{name} is {size.depth} fields deep; the maximum is {MAX_DEPTH}",
                    definition))
            if size.aliases > MAX_ALIASES:
                context.report_error(GraphQLError(
                    f"{name} uses {size.aliases} aliases; the maximum is {MAX_ALIASES}",
                    definition))

    def measure(self, node: Node, open_fragments: frozenset[str]) -> Size:
        """Return the depth below `node` and the aliases within it, fragments expanded."""
        selection_set = getattr(node, "selection_set", None)
        depth = aliases = 0
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                if selection.name.value.startswith("__"):
                    continue
                inner = self.measure(selection, open_fragments)
                depth = max(depth, 1 + inner.depth)
                aliases += inner.aliases + (selection.alias is not None)
            elif isinstance(selection, FragmentSpreadNode):
                inner = self.fragment(selection.name.value, open_fragments)
                depth, aliases = max(depth, inner.depth), aliases + inner.aliases
            else:
                inner = self.measure(selection, open_fragments)
                depth, aliases = max(depth, inner.depth), aliases + inner.aliases
        return Size(depth, aliases)

    def fragment(self, name: str, open_fragments: frozenset[str]) -> Size:
        """Return the size of a fragment, measured once; cycles and unknown names count 0."""
        if name in open_fragments or name not in self.fragments:
            return Size()  # graphql-core reports cycles and unknown fragments itself
        if name not in self.sizes:
            self.sizes[name] = self.measure(self.fragments[name], open_fragments | {name})
        return self.sizes[name]

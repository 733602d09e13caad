"""The GraphQL API (of clients, the ops dashboard and the on-call commands): strawberry types,
queries, mutations, their filters, cursors, limits, errors, access and audit, the HTTP view,
and the committed schema.graphql."""

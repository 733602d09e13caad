"""The GraphQL API of the ops dashboard: strawberry types, queries, mutations and the view."""

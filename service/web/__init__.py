"""The web process: the Flask app (GraphQL API, health, metrics) and the ops dashboard's static
pages.
"""

"""The web process: the Flask app (GraphQL API, health, metrics), the ops dashboard's static
pages, and gunicorn's logs as JSON lines.
"""

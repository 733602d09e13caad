"""The system of record: connection pool, migrations and one module per table."""

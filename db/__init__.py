"""The system of record: the connection pool, the migrations, the named statements of
queries/*.sql and the modules that run them (one per table or concern), the words every layer
shares (vocabulary) and the service's database errors."""

"""Local servers for development, tests and benchmarks: the embedded PostgreSQL (and a
disposable one), the Kafka-protocol broker, PgBouncer in transaction mode, a TLS-only
PostgreSQL; the ports they listen on and the processes that run beside them.
"""

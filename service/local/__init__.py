"""Local servers for development and tests: the embedded PostgreSQL and the Kafka-protocol
broker.
"""

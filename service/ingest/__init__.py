"""Events in: the Kafka consumer, the storing of its batches, the envelope rules of a broker
message, the batches it cannot decode, reading committed transactions from a broker that
does not list the aborted ones, and the upgrade adapter that turns the former model's retries
into deliveries.
"""

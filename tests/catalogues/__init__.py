"""What the tests and the reliability runs (tests/reliability) both feed the service.

hostile_endpoints: endpoints that misbehave, and what every attempt to each must record;
ssrf_targets: hosts that are, or resolve to, addresses inside; poison_messages: Kafka
messages that are no event, and the reason each must be quarantined with.
"""

"""Deliveries out: the claim-send-record pipeline, its send queue, the HTTP sender and the
request it builds, the verdict on a response, the wake-ups, stale-claim recovery and the
circuit breaker's reports.
"""

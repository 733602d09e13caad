"""Chaos runs that show "nothing lost": `python -m bench.chaos --help`, docs/reliability.md.

faults (the receiver's deterministic fault schedule) -> receiver (the flaky endpoint
process) -> fleet (receiver and worker processes, kills) -> produce (Kafka) -> scenarios
(crash, database, broker) -> check (the verdict from the database and the receiver's record).
"""

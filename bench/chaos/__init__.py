"""Chaos runs that show "nothing lost": `python -m bench.chaos --help`, docs/reliability.md.

faults (the receiver's deterministic fault schedule) -> receiver (the flaky endpoint
process) -> fleet (receiver and worker processes, kills) -> produce (Kafka) -> run (what
every scenario shares) -> scenarios (crash, database, broker) -> evidence (read back) ->
check (the verdict) -> report (the text printed).
"""

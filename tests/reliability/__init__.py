"""Chaos runs that show "nothing lost": `python -m tests.reliability --help`, docs/reliability.md.

Verification at scale, not a benchmark: each scenario ends in a verdict, not a number.

Crashes and outages: faults (the receiver's deterministic fault schedule) -> receiver (the
flaky endpoint process) -> fleet (receiver and worker processes, kills) -> produce (Kafka)
-> run (what every scenario shares) -> scenarios (crash, database, broker, poison) ->
evidence (read back) -> check (the verdict) -> report (the text printed).

Hostile input, on the catalogues the tests share (tests/catalogues: hostile endpoints, SSRF
targets, poison messages): attacks (the hostile and ssrf scenarios; ssrf_worker resolves the
catalogue's fake names in a worker process) and secrets (the secrets scenario).
"""

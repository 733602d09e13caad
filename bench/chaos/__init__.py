"""Chaos runs that show "nothing lost": `python -m bench.chaos --help`, docs/reliability.md.

Crashes and outages: faults (the receiver's deterministic fault schedule) -> receiver (the
flaky endpoint process) -> fleet (receiver and worker processes, kills) -> produce (Kafka)
-> run (what every scenario shares) -> scenarios (crash, database, broker, poison) ->
evidence (read back) -> check (the verdict) -> report (the text printed).

Hostile input, with what the tests share: hostile (endpoints that misbehave), targets (the
SSRF catalogue; ssrf_worker resolves its fake names in a worker process), poison (messages
that are no event) -> attacks (the hostile and ssrf scenarios) and secrets (the secrets
scenario).
"""

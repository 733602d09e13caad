"""Endpoint health across worker processes: one probe among racers, a config's maxInFlight
and the ramp after a resume for all of them."""

from __future__ import annotations

import json
import subprocess
import sys

import gevent

from db import deliveries, health
from db.health import HealthRules
from db.scope import PLATFORM
from tests.endpoint_health import events_for, open_circuit, row, stage
from tests.helpers import PATIENCE

PROCESSES = 6

# Each process connects, says `ready` and waits for the word to start, then claims `rounds`
# times (holding what it claims, as a worker does during its HTTP calls) and prints the claims.
RACER = """
import json, sys
from db import deliveries
from db.health import HealthRules
from db.scope import PLATFORM
from db.pool import ConnectionPool
from db.scope import PLATFORM
dsn, rounds, cap, ramp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[5])
pool = ConnectionPool(dsn, size=1)
pool.execute("ping")
print("ready", flush=True)
sys.stdin.readline()
claimed = []
for _ in range(rounds):
    claimed += deliveries.claim_due(pool, owner=sys.argv[5], limit=10,
                                    rules=HealthRules(cap=cap, ramp=ramp))
print(json.dumps([[c.id, c.probe] for c in claimed]))
"""


def race(database_url: str, *, rounds: int, cap: int = 25, ramp: float = 0.001) -> list[list]:
    """Run PROCESSES claimers at once, when all are connected; return what each claimed."""
    racers = [subprocess.Popen([sys.executable, "-c", RACER, database_url, str(rounds),
                                str(cap), f"racer-{n}", str(ramp)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for n in range(PROCESSES)]
    try:
        with gevent.Timeout(PATIENCE, AssertionError("a racer did not connect in time")):
            for racer in racers:
                assert racer.stdout.readline() == "ready\n", racer.communicate()[1]
        for racer in racers:
            racer.stdin.write("go\n")
            racer.stdin.flush()
        outputs = []
        for racer in racers:
            out, err = racer.communicate(timeout=PATIENCE)
            assert racer.returncode == 0, err
            outputs.append(json.loads(out))
        return outputs
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.communicate()


def test_racing_worker_processes_send_exactly_one_probe(make, database_url):
    config = make.config()
    events_for(make, config, 20)
    open_circuit(make, config)
    stage(make, config.id, next_probe_at=row(make, config.id)["opened_at"])
    claims = [claim for claimed in race(database_url, rounds=3) for claim in claimed]
    assert len(claims) == 1 and claims[0][1] is True
    assert row(make, config.id)["state"] == "half_open"
    assert make.count("SELECT count(*) FROM deliveries WHERE status = 'delivering'") == 1


def test_the_cap_holds_across_worker_processes(make, database_url):
    capped = make.config(event_types=["capped"], max_in_flight=4)
    free = make.config(event_types=["free"])
    events_for(make, capped, 60)
    events_for(make, free, 30)
    claims = [claim for claimed in race(database_url, rounds=5, cap=100) for claim in claimed]
    by_config = in_flight(make)
    assert by_config == {capped.id: 4, free.id: 30}
    assert len(claims) == 34
    assert make.count("SELECT count(*) FROM deliveries WHERE status = 'delivering' "
                      "AND config_id = %s", (capped.id,)) == 4


def in_flight(make) -> dict[str, int]:
    """The attempts in flight per config across all workers, where any are."""
    with make.pool.transaction() as cursor:
        cursor.execute("SELECT config_id, in_flight FROM config_health WHERE in_flight > 0")
        return dict(cursor.fetchall())


def test_the_ramp_after_a_resume_holds_across_worker_processes(make, database_url):
    """Without a maxInFlight a config has no fleet-wide cap, but its release after a pause is
    fleet-wide: the cap grows from 1 over the ramp, whatever the number of workers."""
    config = make.config()
    events_for(make, config, 40)
    health.pause(make.pool, PLATFORM, config.id, reason="test")
    health.resume(make.pool, PLATFORM, config.id, reason="test")
    claims = [claim for claimed in race(database_url, rounds=4, cap=7, ramp=3600.0)
              for claim in claimed]
    assert len(claims) == 1  # the first of the ramp's hour: one attempt in flight
    assert row(make, config.id)["in_flight"] == 1
    assert in_flight(make) == {config.id: 1}
    assert deliveries.seconds_until_next_due(make.pool, HealthRules(cap=7, ramp=3600)) is None

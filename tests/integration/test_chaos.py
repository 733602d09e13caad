"""Nothing lost under chaos: the fast variants of `python -m tests.reliability`
(docs/reliability.md).

The crash and outage scenarios run real worker processes against the flaky receiver process
(30 % of attempts fail with 500s, hangs, resets and slow bodies), wait until every delivery
is terminal, and check every delivery's history against the receiver's record of every
POST. The hostile-input scenarios run at their smallest: hostile endpoints, SSRF targets, a
poisoned topic and the search for secrets, each through real worker processes.
"""

import subprocess
import sys

import pytest

from tests.catalogues.hostile_endpoints import KINDS
from tests.helpers import PATIENCE
from tests.reliability import attacks, scenarios
from tests.reliability.report import report
from tests.reliability.run import Options
from tests.reliability.secrets import secrets

pytestmark = pytest.mark.slow

# Small runs: an HTTP timeout of 2.5 s (the flaky receiver's hangs and slow bodies last 30 s
# and more, the hostile ones 100 s and more; an answer that a busy machine delays past it is
# recorded as a timeout at the limit, which the checker tells apart), claims that go stale
# only after 15 s (six HTTP timeouts: a claim waits behind at most two shares of sends),
# twenty minutes for a run to settle.
FAST = Options(events=300, configs=2, kill_every=2.0, max_kills=3, rate=300.0,
               session_timeout=2.0, outage=3.0, freeze=11.0, deadline=1200.0, per_kind=3,
               ssrf_rounds=2, poison_messages=500, secret_configs=6, http_timeout=2.5,
               hostile_timeout=2.5, claim_timeout=15.0)


def settled(verdict) -> dict:
    """Assert the verdict found nothing wrong and every pair ended; return its counts."""
    assert verdict.ok, report("chaos", verdict)
    counts = verdict.counts
    assert counts["deliveries"] == counts["expected_deliveries"] == 2 * FAST.events
    assert counts["lost"] == counts["stuck"] == 0
    assert counts["succeeded"] + counts["failed"] == counts["deliveries"]
    return counts


def test_workers_killed_mid_flight_lose_nothing_and_duplicate_only_what_they_held(
        database_url, tmp_path):
    counts = settled(scenarios.crash(database_url, tmp_path, FAST))
    assert counts["kills"] >= 2
    assert counts["claims_held_at_kills"] > 0  # the kills did hit work in progress
    assert counts["unrecorded_posts"] <= counts["claims_held_at_kills"]


def test_postgres_killed_mid_stream_is_survived_by_the_same_workers(
        own_postgres, kafka_broker, tmp_path):
    counts = settled(scenarios.database_outage(own_postgres, kafka_broker, tmp_path, FAST))
    assert counts["workers_survived"]
    assert counts["outage_seconds"] >= FAST.outage
    assert counts["batches_not_stored"] > 0  # produced during the outage: the consumer hit it
    assert counts["unrecorded_posts"] == 0
    assert counts["committed"] == counts["end"]


def test_a_broker_frozen_past_the_session_timeout_ingests_once_and_sends_once(
        database_url, own_broker, tmp_path):
    counts = settled(scenarios.broker_outage(database_url, own_broker, tmp_path, FAST))
    assert counts["workers_survived"]
    assert counts["stored_while_frozen"] == 0  # the broker really was unreachable
    assert counts["duplicate_posts"] == 0
    # A 2xx twice only where the first came after the timeout (checked per delivery)
    assert counts["deliveries_2xx_more_than_once"] <= counts["slow_timeouts"]
    assert counts["committed"] == counts["end"]


def test_hostile_endpoints_get_bounded_attempts_with_clear_errors(database_url, tmp_path):
    verdict = attacks.hostile(database_url, tmp_path, FAST)
    assert verdict.ok, report("hostile", verdict)
    assert verdict.counts["deliveries"] == len(KINDS) * FAST.per_kind
    assert verdict.counts["internal_connections"] == 0


def test_every_ssrf_target_is_blocked_before_any_connection(database_url, tmp_path):
    verdict = attacks.ssrf(database_url, tmp_path, FAST)
    assert verdict.ok, report("ssrf", verdict)
    assert verdict.counts["blocked"] == verdict.counts["deliveries"] >= 30 * FAST.ssrf_rounds
    assert verdict.counts["listener_connections"] == verdict.counts["connections_opened"] == 0


def test_a_poisoned_topic_delivers_every_event_and_quarantines_the_rest(
        database_url, kafka_broker, tmp_path):
    verdict = scenarios.poison_topic(database_url, kafka_broker, tmp_path, FAST)
    counts = verdict.counts
    assert verdict.ok, report("poison", verdict)
    assert counts["lost"] == counts["stuck"] == 0
    assert counts["succeeded"] == counts["deliveries"] == 2 * counts["good_produced"]
    assert counts["quarantined"] == counts["poison_produced"] > counts["good_produced"]


def test_no_secret_or_token_shows_after_creation(database_url, tmp_path):
    verdict = secrets(database_url, tmp_path, FAST)
    assert verdict.ok, report("secrets", verdict)
    assert verdict.counts["secrets_checked"] > 2 * FAST.secret_configs
    assert verdict.counts["echoed_signatures"] > 0


def test_the_chaos_command_describes_its_scenarios():
    result = subprocess.run([sys.executable, "-m", "tests.reliability", "--help"],
                            capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert result.returncode == 0, result.stderr
    for flag in ("--scenario", "--events", "--kill-every", "--fail-rate", "--quick", "--per-kind",
                 "--ssrf-rounds", "--poison-messages", "--secret-configs"):
        assert flag in result.stdout

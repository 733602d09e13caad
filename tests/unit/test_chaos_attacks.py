"""The hostile, SSRF and secrets judges on made-up evidence: a faithful run passes, each damage
fails."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from tests.catalogues.hostile_endpoints import KINDS
from tests.reliability.attacks import HOSTILE_ATTEMPTS, judge_hostile, judge_ssrf
from tests.reliability.report import report
from tests.reliability.run import Options
from tests.reliability.secrets import judge_secrets, leaked

OPTIONS = Options(per_kind=2, ssrf_rounds=2, concurrency=10)
FACTS = {"stuck": 0, "workers_survived": True, "workers_exited_by_themselves": 0,
         "worker_exit_codes": [0, 0], "rss_start_mb": 80.0, "rss_peak_mb": 90.0,
         "elapsed_seconds": 1.0}
BLOCKED = ("blocked: {host} resolves to 127.0.0.1 (loopback); set "
           "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS=true to allow private endpoints")


def hostile_rows() -> list[tuple]:
    """Return the rows of a faithful hostile run: each kind's deliveries as its Kind says."""
    rows, id = [], 0
    for kind in KINDS:
        for _ in range(OPTIONS.per_kind):
            id += 1
            retried = kind.status == "failed" and kind.outcome != "http_error"
            count = HOSTILE_ATTEMPTS if retried else 1
            last_error = None if kind.error is None else f"HTTP 302: {kind.error}"
            if retried:
                last_error = f"{kind.error}; retry budget exhausted"
            error = kind.error if kind.status_code == 0 else None
            rows += [(kind.name, id, kind.status, count, last_error, kind.outcome,
                      kind.status_code, 2000 if kind.outcome == "timeout" else 30, error, 10)
                     for _ in range(count)]
    return rows


def test_a_faithful_hostile_run_passes_and_reports_every_kind():
    verdict = judge_hostile(hostile_rows(), Counter(), FACTS, OPTIONS)
    assert verdict.ok, report("hostile", verdict)
    assert verdict.counts["deliveries"] == len(KINDS) * OPTIONS.per_kind
    text = report("hostile", verdict)
    assert all(kind.name in text for kind in KINDS)


def damaged(index: int, **changes) -> list[tuple]:
    fields = ("name", "delivery", "status", "count", "last_error", "outcome", "code", "ms",
              "error", "excerpt")
    rows = hostile_rows()
    row = dict(zip(fields, rows[index], strict=True))
    rows[index] = tuple({**row, **changes}.values())
    return rows


@pytest.mark.parametrize(("rows", "connections", "facts", "problem"), [
    (damaged(2, ms=4500), {}, {}, "attempt longer than the timeout allows"),
    (damaged(2, outcome="network_error"), {}, {}, "attempt recorded otherwise"),
    (damaged(2, error="something"), {}, {}, "attempt without the endpoint's error"),
    (damaged(0, excerpt=70_000), {}, {}, "more of a body kept than the limit"),
    (damaged(2, status="pending"), {}, {}, "delivery ended otherwise"),
    (damaged(2, last_error="HTTP 500"), {}, {}, "failed without the endpoint's error"),
    (hostile_rows(), {"internal": 1}, {}, "redirect followed to the internal target"),
    (hostile_rows(), {}, {"rss_peak_mb": 500.0}, "worker memory beyond its bound"),
    (hostile_rows(), {}, {"worker_exit_codes": [0, -9]}, "worker did not stop cleanly on SIGTERM"),
    (hostile_rows(), {}, {"stuck": 3}, "stuck"),
])
def test_each_hostile_damage_is_found(rows, connections, facts, problem):
    verdict = judge_hostile(rows, Counter(connections), {**FACTS, **facts}, OPTIONS)
    assert problem in verdict.problem_counts, report("hostile", verdict)


TARGETS = ["http://127.0.0.1:9/ssrf", "https://[::1]:9/ssrf"]


def ssrf_rows(**changes) -> list[tuple]:
    rows = [(target, n * 10 + round, "failed", 0, "blocked", BLOCKED.format(host=target))
            for n, target in enumerate(TARGETS) for round in range(OPTIONS.ssrf_rounds)]
    if changes:
        rows[0] = (*rows[0][:2], *changes.values())
    return rows


def listener(connections: int = 0, controls: int = 2) -> SimpleNamespace:
    return SimpleNamespace(connections=connections, controls_seen=controls, CONTROLS=2)


def test_a_faithful_ssrf_run_passes():
    verdict = judge_ssrf(ssrf_rows(), TARGETS, listener(), [], FACTS, OPTIONS)
    assert verdict.ok, report("ssrf", verdict)
    assert verdict.counts["blocked"] == verdict.counts["deliveries"] == 4
    assert verdict.counts["reasons"] == {"loopback": 4}


@pytest.mark.parametrize(("rows", "seen", "opened", "problem"), [
    (ssrf_rows(status="failed", count=0, outcome="network_error", error="refused"), listener(),
     [], "attempt not clearly blocked"),
    (ssrf_rows(status="pending", count=0, outcome="blocked", error="blocked: x"), listener(),
     [], "delivery not failed at its first attempt"),
    (ssrf_rows(status="failed", count=1, outcome="blocked", error="blocked: x"), listener(),
     [], "delivery not failed at its first attempt"),  # a blocked attempt sent no request
    (ssrf_rows()[1:], listener(), [], "deliveries missing"),
    (ssrf_rows(), listener(connections=1), [], "connection seen by the listener"),
    (ssrf_rows(), listener(controls=1), [], "the listener is blind"),
    (ssrf_rows(), listener(), ['["10.0.0.1", 9]'], "connection opened by the sender"),
    (ssrf_rows(), listener(), None, "the workers' connection log is missing"),
])
def test_each_ssrf_damage_is_found(rows, seen, opened, problem):
    verdict = judge_ssrf(rows, TARGETS, seen, opened, FACTS, OPTIONS)
    assert problem in verdict.problem_counts, report("ssrf", verdict)


SECRET = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
TOKEN = "whk_c2VjcmV0LXRva2VuLW9mLWEtdmlld2Vy"
SHOWN = ['{"data": {"delivery": {"attempts": [{"responseExcerpt": "webhook-signature: v1,x"}]}}}']


def test_secrets_are_found_without_their_prefix():
    assert leaked(f"key={SECRET[6:]}", [SECRET, TOKEN]) == [SECRET]
    assert leaked(f"Bearer {TOKEN}", [SECRET, TOKEN]) == [TOKEN]


@pytest.mark.parametrize(("shown", "logs", "problem"), [
    ([*SHOWN, f'{{"secret": "{SECRET}"}}'], [], "secret or token in the API output"),
    (SHOWN, [f"token {TOKEN[4:]}"], "secret or token in the log"),
    (['{"data": {}}'], [], "no signature echo in the API output"),
])
def test_a_secret_shown_after_creation_is_found(shown, logs, problem):
    assert judge_secrets([SECRET], [TOKEN], SHOWN, [], FACTS, OPTIONS).ok
    verdict = judge_secrets([SECRET], [TOKEN], shown, logs, FACTS, OPTIONS)
    assert problem in verdict.problem_counts, report("secrets", verdict)

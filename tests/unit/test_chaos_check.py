"""The chaos checker on made-up evidence: a faithful history passes, every kind of damage fails."""

from __future__ import annotations

import dataclasses

import pytest

from tests.reliability.check import CLAIMS_PER_SLOT, Rules, check
from tests.reliability.evidence import Attempt, Delivery, Evidence, Kill
from tests.reliability.faults import KINDS, OK, RECORDED, choose, first_success
from tests.reliability.report import report

RULES = Rules(seed=7, fail_rate=0.3, max_attempts=3, http_timeout=1.0, concurrency=10)
BUDGET = "retry budget exhausted: 3 attempts (WEBHOOKS_MAX_ATTEMPTS)"


def simulate(events: int = 60, *, killed: dict[int, int] | None = None,
             late: set[tuple[int, int]] | None = None,
             fenced: set[tuple[int, int]] | None = None) -> Evidence:
    """Return the evidence of a faithful run of the dispatcher against the fault schedule.

    `killed` {delivery: attempt}: that attempt was POSTed by a worker killed before recording
    it (the delivery is among its claims) and POSTed again. `late` {(delivery, attempt)}: the
    answer came after the 1 s timeout and was recorded as a timeout. `fenced`: the result was
    recorded after the claim had been recovered, and the attempt was POSTed again.
    """
    killed, late, fenced = killed or {}, late or set(), fenced or set()
    published = {f"evt-{n}": "t" for n in range(events)}
    evidence = Evidence(published=published,
                        subscriptions={"a": ("t",), "b": ("t", "u"), "c": ("u",)},
                        events=set(published), deliveries=[], attempts=[], posts=[],
                        kills=[Kill(at=1.0, pid=n, held=[id])
                               for n, id in enumerate(sorted(killed))])
    id = 0
    for event in published:
        for config in ("a", "b"):
            id += 1
            number = 0
            while number < RULES.max_attempts:
                number += 1
                kind = choose(RULES.seed, str(id), 0, number, RULES.fail_rate)
                sends = 1 + (killed.get(id) == number) + ((id, number) in fenced)
                for _ in range(sends):
                    evidence.posts.append({"id": str(id), "gen": 0, "attempt": number,
                                           "kind": kind, "sent": kind == OK, "t": 0})
                outcome, code = RECORDED[kind]
                duration = 1000 if outcome == "timeout" else 3
                if (id, number) in late:
                    outcome, code, duration = "timeout", 0, 1001
                for _ in range(1 + ((id, number) in fenced)):
                    evidence.attempts.append(Attempt(id, number, 0, outcome, code, duration))
                if outcome == "success":
                    break
            succeeded = outcome == "success"
            evidence.deliveries.append(Delivery(
                id, event, config, "succeeded" if succeeded else "failed", number, 0, code,
                None if succeeded else f"HTTP {code}; {BUDGET}"))
    return evidence


def problems(evidence: Evidence, rules: Rules = RULES) -> set[str]:
    return set(check(evidence, rules).problems)


def first_delivery(evidence: Evidence, *, status: str) -> Delivery:
    return next(d for d in evidence.deliveries if d.status == status)


def replace_delivery(evidence: Evidence, delivery: Delivery, **changes) -> None:
    index = evidence.deliveries.index(delivery)
    evidence.deliveries[index] = dataclasses.replace(delivery, **changes)


def test_the_schedule_is_a_pure_function_of_the_attempt():
    kinds = [choose(1, str(id), 0, 1, 0.3) for id in range(2000)]
    assert kinds == [choose(1, str(id), 0, 1, 0.3) for id in range(2000)]
    assert 0.25 < sum(kind != OK for kind in kinds) / len(kinds) < 0.35
    assert set(kinds) == {OK, *KINDS}
    assert choose(1, "5", 0, 1, 0.0) == OK and choose(1, "5", 0, 1, 1.0) in KINDS
    assert first_success(1, "5", 1.0, 15) is None


def test_a_faithful_history_passes_and_ends_as_the_schedule_says():
    evidence = simulate()
    verdict = check(evidence, RULES)
    assert verdict.ok, verdict.problems
    counts = verdict.counts
    assert counts["deliveries"] == counts["expected_deliveries"] == 120
    assert counts["configs"] == 2
    assert counts["failed"] > 0 and counts["succeeded"] > 0
    assert counts["lost"] == counts["stuck"] == counts["duplicate_posts"] == 0
    assert "kills" in counts and counts["kills"] == 0
    assert "verdict     OK" in report("crash", verdict)


def test_every_status_is_counted_even_when_no_delivery_ends_in_it():
    evidence = simulate(events=3)
    evidence.deliveries = [d for d in evidence.deliveries if d.status == "succeeded"]
    evidence.published = {d.event_id: "t" for d in evidence.deliveries}
    evidence.events = set(evidence.published)
    counts = check(evidence, RULES).counts
    assert counts["failed"] == counts["cancelled"] == counts["pending"] == 0
    assert counts["succeeded"] == len(evidence.deliveries) > 0


def test_a_missing_delivery_is_lost():
    evidence = simulate()
    gone = evidence.deliveries.pop(5)
    verdict = check(evidence, RULES)
    assert verdict.counts["lost"] == 1
    assert "lost" in verdict.problems
    assert f"event {gone.event_id} to config {gone.config_id}" in verdict.problems["lost"][0]
    assert "FAILED" in report("crash", verdict)


def test_an_event_never_stored_and_one_never_published_are_reported():
    evidence = simulate()
    evidence.events.discard("evt-3")
    evidence.events.add("evt-stranger")
    assert {"event not stored", "event stored that was never published"} <= problems(evidence)


def test_a_delivery_to_a_config_not_subscribed_is_reported():
    evidence = simulate()
    evidence.deliveries.append(Delivery(999, "evt-1", "c", "succeeded", 0, 0, None, None))
    assert "unexpected delivery" in problems(evidence)


@pytest.mark.parametrize("status", ["pending", "delivering"])
def test_a_delivery_left_unfinished_is_stuck(status):
    evidence = simulate()
    replace_delivery(evidence, evidence.deliveries[0], status=status)
    verdict = check(evidence, RULES)
    assert verdict.counts["stuck"] == 1 and "stuck" in verdict.problems


def test_a_cancelled_delivery_is_reported():
    evidence = simulate()
    replace_delivery(evidence, evidence.deliveries[0], status="cancelled")
    assert "cancelled" in problems(evidence)


def test_a_success_the_receiver_never_answered_is_reported():
    evidence = simulate()
    delivery = first_delivery(evidence, status="succeeded")
    for post in evidence.posts:
        if post["id"] == str(delivery.id) and post["kind"] == OK:
            post["sent"] = False
    assert problems(evidence) == {"success the receiver never sent"}


def test_an_attempt_recorded_differently_from_the_answer_is_reported():
    evidence = simulate()
    index = next(n for n, a in enumerate(evidence.attempts) if a.outcome == "http_error")
    evidence.attempts[index] = dataclasses.replace(evidence.attempts[index],
                                                   outcome="network_error", status_code=0)
    assert "attempt does not match the answer" in problems(evidence)


def test_a_quick_timeout_is_not_excused_as_a_slow_machine():
    evidence = simulate()
    index = next(n for n, a in enumerate(evidence.attempts) if a.outcome == "http_error")
    evidence.attempts[index] = dataclasses.replace(evidence.attempts[index], outcome="timeout",
                                                   status_code=0, duration_ms=200)
    assert "attempt does not match the answer" in problems(evidence)


def test_an_answer_that_came_after_the_timeout_is_a_timeout_and_is_sent_again():
    delivery = next(d for d in simulate().deliveries
                    if d.status == "succeeded" and d.attempt_count < RULES.max_attempts)
    late = simulate(late={(delivery.id, delivery.attempt_count)})
    for rules in (RULES, dataclasses.replace(RULES, exactly_once=True)):
        verdict = check(late, rules)
        assert verdict.ok, verdict.problems
        assert verdict.counts["slow_timeouts"] == 1
        assert verdict.counts["deliveries_2xx_more_than_once"] == 1


def test_a_request_read_too_late_to_be_answered_in_time_is_a_timeout():
    evidence = simulate()
    delivery = next(d for d in evidence.deliveries
                    if d.status == "succeeded" and d.attempt_count > 1)
    first = next(p for p in evidence.posts if p["id"] == str(delivery.id))
    evidence.posts.remove(first)  # never read; the attempt timed out at the limit
    index = next(n for n, a in enumerate(evidence.attempts)
                 if a.delivery_id == delivery.id and a.attempt_number == 1)
    evidence.attempts[index] = dataclasses.replace(evidence.attempts[index], outcome="timeout",
                                                   status_code=0, duration_ms=1003)
    verdict = check(evidence, RULES)
    assert verdict.ok, verdict.problems
    assert verdict.counts["attempts_never_read"] == 1
    evidence.attempts[index] = dataclasses.replace(evidence.attempts[index], duration_ms=400)
    assert "attempt does not match the answer" in problems(evidence)


def test_an_answer_recorded_for_a_request_never_read_is_reported():
    evidence = simulate()
    index = next(n for n, a in enumerate(evidence.attempts) if a.outcome == "http_error")
    attempt = evidence.attempts[index]
    evidence.posts = [p for p in evidence.posts
                      if (p["id"], p["attempt"]) != (str(attempt.delivery_id),
                                                     attempt.attempt_number)]
    assert problems(evidence) == {"attempt recorded more often than POSTed"}


def test_a_gap_in_the_attempt_numbers_is_reported():
    evidence = simulate()
    delivery = first_delivery(evidence, status="succeeded")
    replace_delivery(evidence, delivery, attempt_count=delivery.attempt_count + 1)
    assert "history does not count its attempts" in problems(evidence)


def test_a_failure_before_the_budget_is_spent_is_reported():
    evidence = simulate()
    delivery = next(d for d in evidence.deliveries
                    if d.status == "succeeded" and d.attempt_count > 1)
    replace_delivery(evidence, delivery, status="failed", attempt_count=delivery.attempt_count,
                     last_error="HTTP 500")
    assert {"failed without exhausting the budget", "end differs from the fault schedule"} <= \
        problems(evidence)


def test_a_failed_delivery_whose_last_attempt_succeeded_is_reported():
    evidence = simulate()
    delivery = first_delivery(evidence, status="succeeded")
    replace_delivery(evidence, delivery, status="failed", last_error=BUDGET)
    assert "failed without exhausting the budget" in problems(evidence)


def test_a_post_sent_again_without_a_crash_is_reported():
    evidence = simulate()
    evidence.posts.append(dict(evidence.posts[0]))
    assert problems(evidence) == {"POST lost without a crash"}
    evidence.kills = [Kill(1.0, 1, [int(evidence.posts[0]["id"]) + 1])]  # another's claim
    assert problems(evidence) == {"POST lost without a crash"}


def test_a_post_sent_again_after_its_worker_was_killed_is_explained():
    verdict = check(simulate(killed={4: 1, 9: 1}), RULES)
    assert verdict.ok, verdict.problems
    assert verdict.counts["duplicate_posts"] == verdict.counts["unrecorded_posts"] == 2
    assert verdict.counts["kills"] == 2 and verdict.counts["max_held_at_a_kill"] == 1
    assert verdict.counts["max_duplicates_from_a_kill"] == 1


def test_each_kill_explains_at_most_one_lost_post_of_each_claim_it_held():
    evidence = simulate(killed={4: 1})
    first = next(p for p in evidence.posts if p["id"] == "4")
    evidence.posts.append({**first, "t": 5.0})  # lost again with a second worker, at 6.0
    evidence.kills.append(Kill(at=6.0, pid=99, held=[4, 5]))
    verdict = check(evidence, RULES)
    assert verdict.ok, verdict.problems
    assert verdict.counts["unrecorded_posts"] == 2
    assert verdict.counts["max_duplicates_from_a_kill"] == 1
    evidence.kills.pop()
    assert problems(evidence) == {"POST lost without a crash"}


def test_a_worker_holding_more_than_the_dispatcher_allows_is_reported():
    evidence = simulate(killed={4: 1})
    evidence.kills[0].held += list(range(1000, 1000 + CLAIMS_PER_SLOT * RULES.concurrency))
    assert "claims held beyond the dispatcher's limit" in problems(evidence)


def test_a_late_result_after_recovery_is_kept_fenced_and_explained():
    verdict = check(simulate(fenced={(3, 1)}), RULES)
    assert verdict.ok, verdict.problems
    assert verdict.counts["fenced_attempts"] == verdict.counts["duplicate_posts"] == 1


def test_without_a_crash_nothing_may_be_sent_twice():
    rules = dataclasses.replace(RULES, exactly_once=True)
    assert check(simulate(), rules).ok
    delivery = next(d for d in simulate().deliveries if d.attempt_count == 1)  # 2xx at once
    evidence = simulate(fenced={(delivery.id, 1)})
    assert check(evidence, RULES).ok
    assert problems(evidence, rules) == {"POST sent twice without a crash",
                                         "2xx more than once without a crash or a late answer"}


def test_an_attempt_recorded_twice_for_one_post_is_reported():
    evidence = simulate()
    evidence.attempts.append(next(a for a in evidence.attempts if a.outcome == "success"))
    assert "attempt recorded more often than POSTed" in problems(evidence)


def test_a_post_beyond_the_history_is_reported():
    evidence = simulate(killed={2: 1})
    delivery = next(d for d in evidence.deliveries if d.id == 2)
    evidence.posts.append({"id": "2", "gen": 0, "attempt": delivery.attempt_count + 1,
                           "kind": choose(RULES.seed, "2", 0, delivery.attempt_count + 1, 0.3),
                           "sent": False, "t": 0})
    assert "POST beyond the recorded history" in problems(evidence)


def test_a_receiver_off_its_schedule_or_an_unknown_webhook_id_is_reported():
    evidence = simulate()
    evidence.posts[0]["kind"] = "500" if evidence.posts[0]["kind"] != "500" else OK
    evidence.posts.append({"id": "424242", "gen": 0, "attempt": 1, "kind": OK, "sent": True,
                           "t": 0})
    assert {"receiver strayed from its schedule", "POST of no known delivery"} <= \
        problems(evidence)

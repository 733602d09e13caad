"""The chaos checker: does the database's history of every delivery match what the endpoint saw?

`check()` is pure: it compares a run's evidence (tests/reliability/evidence.py: what was
published, the database's events, deliveries and attempts, the receiver's record of every
POST) and returns the counts and every problem found.

Words used in the report:
- a *key* is (delivery id, replay generation, attempt number): what the receiver's fault
  schedule depends on, and what the dispatcher numbers its attempts by;
- a *duplicate POST* is a POST of a key that had already been POSTed: the same attempt sent
  again because its result was never recorded (its worker died) or was recorded too late
  (its claim had gone stale and was handed to another worker; that result is kept as a
  *fenced* attempt and changes nothing);
- an *unrecorded POST* is one whose result no attempt row holds; each must belong to a
  delivery that a killed worker held when it died.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from tests.reliability.evidence import Attempt, Delivery, Evidence, Kill
from tests.reliability.faults import RECORDED, choose, first_success

EXAMPLES = 5  # problems of one kind quoted in the report; the rest are counted
SLOW_TIMEOUT_SHARE = 0.9  # a timeout at least this share of WEBHOOKS_HTTP_TIMEOUT is genuine
# Claims a worker holds at most per WEBHOOKS_DISPATCH_CONCURRENCY slot: ready to send, in
# flight, or waiting to be recorded (Dispatcher.backlog_limit in service/dispatch/dispatcher.py)
CLAIMS_PER_SLOT = 3
KILL_SKEW = 1.0  # seconds the receiver may read a request after its sender was found dead


@dataclass(frozen=True)
class Rules:
    """The run's settings the verdict depends on."""

    seed: int
    fail_rate: float
    max_attempts: int
    http_timeout: float  # seconds
    concurrency: int  # WEBHOOKS_DISPATCH_CONCURRENCY of each worker
    exactly_once: bool = False  # no crash in the run: no POST may be sent twice


@dataclass
class Verdict:
    counts: dict[str, Any]
    problems: dict[str, list[str]]  # kind -> examples (at most EXAMPLES)
    problem_counts: Counter

    @property
    def ok(self) -> bool:
        return not self.problem_counts


class Findings:
    """Problems found: every one counted by kind, the first EXAMPLES of each kind quoted."""

    def __init__(self) -> None:
        self.examples: dict[str, list[str]] = defaultdict(list)
        self.counts: Counter = Counter()

    def add(self, kind: str, detail: str, count: int = 1) -> None:
        self.counts[kind] += count
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(detail)

    def require(self, condition: bool, kind: str, detail: str) -> None:
        """Add a problem of `kind` unless `condition` holds."""
        if not condition:
            self.add(kind, detail)

    def verdict(self, counts: dict[str, Any]) -> Verdict:
        return Verdict(counts=counts, problems=dict(self.examples), problem_counts=self.counts)


def check(evidence: Evidence, rules: Rules) -> Verdict:
    """Compare every (event, config) pair's delivery and history with the receiver's record."""
    found = Findings()
    counts: Counter = Counter(dict.fromkeys(  # each present, zero too: a run may have no failed
        ("pending", "delivering", "succeeded", "failed", "cancelled",
         "duplicate_posts", "unrecorded_posts", "fenced_attempts", "slow_timeouts",
         "attempts_never_read",
         "deliveries_2xx_more_than_once", *(f"posts_{kind}" for kind in RECORDED),
         *(f"duplicate_posts_{kind}" for kind in RECORDED)), 0))
    expected = {(event, config) for event, type in evidence.published.items()
                for config, types in evidence.subscriptions.items() if type in types}
    by_pair = {(d.event_id, d.config_id): d for d in evidence.deliveries}
    for event in sorted(set(evidence.published) - evidence.events):
        found.add("event not stored", event)
    for event in sorted(evidence.events - set(evidence.published)):
        found.add("event stored that was never published", event)
    lost = expected - by_pair.keys()
    for event, config in sorted(lost):
        found.add("lost", f"no delivery of event {event} to config {config}")
    for event, config in sorted(by_pair.keys() - expected):
        found.add("unexpected delivery", f"event {event} to config {config}")

    attempts: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in evidence.attempts:
        attempts[attempt.delivery_id].append(attempt)
    posts: dict[int, list[dict]] = defaultdict(list)
    known = {d.sent_id: d.id for d in evidence.deliveries}
    for post in evidence.posts:
        if post["id"] in known:
            posts[known[post["id"]]].append(post)
        else:
            found.add("POST of no known delivery", repr(post))
    kills = evidence.kills or []
    held = Counter(id for kill in kills for id in kill.held)

    unrecorded: dict[int, list[float]] = {}  # delivery -> times of its POSTs never recorded
    for delivery in evidence.deliveries:
        counts[delivery.status] += 1
        unrecorded[delivery.id] = _check_delivery(
            delivery, attempts[delivery.id], posts[delivery.id], held[delivery.id], rules,
            found, counts)

    counts.update({
        "events": len(evidence.published),
        "configs": sum(any(t in types for t in set(evidence.published.values()))
                       for types in evidence.subscriptions.values()),
        "deliveries": len(evidence.deliveries),
        "expected_deliveries": len(expected),
        "lost": len(lost),
        "stuck": counts["pending"] + counts["delivering"],
        "attempts": len(evidence.attempts),
        "posts": len(evidence.posts),
    })
    if evidence.kills is not None:
        held_sizes = [len(kill.held) for kill in kills]
        counts.update({
            "kills": len(kills),
            "claims_held_at_kills": sum(held_sizes),
            "max_held_at_a_kill": max(held_sizes, default=0),
            "kills_times_concurrency": len(kills) * rules.concurrency,
            "max_duplicates_from_a_kill": max(_per_kill(kills, unrecorded), default=0),
        })
    for post in evidence.posts:
        counts[f"posts_{post['kind']}"] += 1
    if counts["stuck"]:
        found.add("stuck", f"{counts['pending']} pending, {counts['delivering']} delivering",
                  counts["stuck"])
    if counts["cancelled"]:
        found.add("cancelled", "no config was deactivated", counts["cancelled"])
    if counts.get("max_held_at_a_kill", 0) > CLAIMS_PER_SLOT * rules.concurrency:
        found.add("claims held beyond the dispatcher's limit",
                  f"{counts['max_held_at_a_kill']} > {CLAIMS_PER_SLOT} x {rules.concurrency}")
    if rules.exactly_once and counts["duplicate_posts"]:
        found.add("POST sent twice without a crash", f"{counts['duplicate_posts']} POSTs",
                  counts["duplicate_posts"])
    return found.verdict(dict(counts))


def _check_delivery(delivery: Delivery, rows: list[Attempt], posts: list[dict], held: int,
                    rules: Rules, found: Findings, counts: Counter) -> list[float]:
    """Check one delivery's history; return when each POST no attempt records arrived."""
    name = f"delivery {delivery.id}"
    rows_at: dict[tuple[int, int], list[Attempt]] = defaultdict(list)
    for row in rows:
        rows_at[row.replay_generation, row.attempt_number].append(row)
    posts_at: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for post in posts:
        posts_at[post["gen"], post["attempt"]].append(post)
    generation = delivery.replay_generation
    if ({g for g, _ in rows_at} | {g for g, _ in posts_at}) - {generation}:
        found.add("attempt of another generation", name)
    numbers = {n for g, n in rows_at if g == generation}
    if numbers != set(range(1, delivery.attempt_count + 1)):
        found.add("history does not count its attempts",
                  f"{name}: attempt_count {delivery.attempt_count}, attempts {sorted(numbers)}")

    slow = late_2xx = 0
    unrecorded: list[float] = []
    limit_ms = SLOW_TIMEOUT_SHARE * rules.http_timeout * 1000
    for key in sorted(rows_at.keys() | posts_at.keys()):
        kind = choose(rules.seed, delivery.sent_id, key[0], key[1], rules.fail_rate)
        sent_2xx = any(post["sent"] for post in posts_at[key])
        for post in posts_at[key]:
            if post["kind"] != kind:
                found.add("receiver strayed from its schedule", f"{name} {key}: {post}")
        answered = 0  # rows that record the receiver's answer, so need a POST it read
        for row in rows_at[key]:
            at_limit = row.outcome == "timeout" and row.duration_ms >= limit_ms
            if (row.outcome, row.status_code) == RECORDED[kind]:
                answered += not at_limit
                if row.outcome == "success" and not sent_2xx:
                    found.add("success the receiver never sent", f"{name} {key}")
            elif at_limit:
                slow += 1  # the answer came too late, or the request was read too late
                late_2xx += sent_2xx
            else:
                found.add("attempt does not match the answer",
                          f"{name} {key}: receiver {kind}, recorded {row.outcome} "
                          f"{row.status_code} in {row.duration_ms} ms")
        if answered > len(posts_at[key]):
            found.add("attempt recorded more often than POSTed",
                      f"{name} {key}: {len(rows_at[key])} attempts, {len(posts_at[key])} POSTs")
        if key[1] > delivery.attempt_count and posts_at[key]:
            found.add("POST beyond the recorded history", f"{name} {key}")
        counts["duplicate_posts"] += max(0, len(posts_at[key]) - 1)
        counts[f"duplicate_posts_{kind}"] += max(0, len(posts_at[key]) - 1)
        counts["fenced_attempts"] += max(0, len(rows_at[key]) - 1)
        counts["attempts_never_read"] += max(0, len(rows_at[key]) - len(posts_at[key]))
        lost = len(posts_at[key]) - len(rows_at[key])  # the first ones: the re-POSTs got recorded
        unrecorded += sorted(post["t"] for post in posts_at[key])[:max(0, lost)]
    counts["unrecorded_posts"] += len(unrecorded)
    counts["slow_timeouts"] += slow
    if len(unrecorded) > held:
        found.add("POST lost without a crash",
                  f"{name}: {len(unrecorded)} unrecorded POSTs, held by {held} killed workers")
    sent_2xx = sum(post["sent"] for post in posts)
    if sent_2xx > 1:
        counts["deliveries_2xx_more_than_once"] += 1
        if rules.exactly_once and sent_2xx - late_2xx > 1:
            found.add("2xx more than once without a crash or a late answer", name)
    _check_end(delivery, rows_at, rules, found, exact=not slow)
    return unrecorded


def _per_kill(kills: list[Kill], unrecorded: dict[int, list[float]]) -> list[int]:
    """Return how many unrecorded POSTs each kill explains.

    A kill loses at most one POST per claim its worker held: each unrecorded POST of a
    delivery goes to the next kill (dead at most KILL_SKEW before the POST was read) that held
    the delivery and has not explained one of its POSTs yet.
    """
    explained = [0] * len(kills)
    for delivery_id, times in unrecorded.items():
        holders = iter(n for n, kill in enumerate(kills) if delivery_id in kill.held)
        for arrived in sorted(times):
            n = next((n for n in holders if kills[n].at >= arrived - KILL_SKEW), None)
            if n is not None:
                explained[n] += 1
    return explained


def _check_end(delivery: Delivery, rows_at: dict[tuple[int, int], list[Attempt]], rules: Rules,
               found: Findings, *, exact: bool) -> None:
    """Check the final state against the last attempt and, when `exact`, the fault schedule."""
    name = f"delivery {delivery.id}"
    if delivery.status not in ("succeeded", "failed"):
        return  # counted as stuck or cancelled
    last = rows_at.get((delivery.replay_generation, delivery.attempt_count), [])
    outcomes = {row.outcome for row in last}
    for (_, number), rows in rows_at.items():
        if number < delivery.attempt_count and len(rows) == 1 and rows[0].outcome == "success":
            found.add("success that did not end the delivery", f"{name} attempt {number}")
    if delivery.status == "succeeded":
        if "success" not in outcomes or not 200 <= (delivery.last_status_code or 0) < 300:
            found.add("succeeded without a successful last attempt", name)
    else:
        budget = f"retry budget exhausted: {rules.max_attempts} attempts"
        if (delivery.attempt_count != rules.max_attempts
                or budget not in (delivery.last_error or "")
                or outcomes == {"success"}):
            found.add("failed without exhausting the budget",
                      f"{name}: {delivery.attempt_count} attempts, {delivery.last_error!r}")
    if exact:
        predicted = first_success(rules.seed, delivery.sent_id, rules.fail_rate,
                                  rules.max_attempts, delivery.replay_generation)
        actual = delivery.attempt_count if delivery.status == "succeeded" else None
        if actual != predicted:
            found.add("end differs from the fault schedule",
                      f"{name}: {delivery.status} after {delivery.attempt_count}, "
                      f"schedule says {predicted or 'failed'}")


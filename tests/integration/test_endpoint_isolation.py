"""Endpoint health with real workers and receivers: open circuits, pause, 410, rate limits."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import time
from typing import Any

import gevent.event

from db import configs, health
from db.scope import PLATFORM
from service.commands.local_api import LocalApi
from service.dispatch.send_queue import HOLD
from tests.endpoint_health import row
from tests.helpers import PATIENCE, wait_until, worker_metric
from tests.receivers import Reply

BREAKER = {"circuit_failures": 3, "min_backoff": 0.05, "max_backoff": 0.1,
           "max_attempts": 1000}


def _delivered(make, *ids: int) -> bool:
    return all(make.row(id)["status"] == "succeeded" for id in ids)


def _event_id(request) -> str:
    return json.loads(request.body)["id"]


def test_an_open_circuit_costs_no_claims_and_no_attempts(make, receiver_factory,
                                                         start_worker, caplog):
    caplog.set_level(logging.INFO, logger="webhooks.health")
    failing = receiver_factory(lambda request: Reply(status=503))
    beacon = receiver_factory()
    bad = make.config(failing.url, event_types=["bad"])
    make.config(beacon.url, event_types=["good"])
    worker = start_worker(**BREAKER, circuit_probe_interval=3600.0,
                          circuit_max_probe_interval=3600.0)
    make.event(type="bad")
    wait_until(lambda: row(make, bad.id)["state"] == "open")
    attempts = make.count("SELECT count(*) FROM delivery_attempts")
    requests = len(failing.requests)
    claims = worker_metric(worker, "webhooks_delivery_transitions_total",
                     **{"from": "pending", "to": "delivering"})
    held = [make.event(type="bad")[1][0] for _ in range(5)]
    for _ in range(2):  # two claim cycles that reached the healthy config
        _, (signal,) = make.event(type="good")
        wait_until(lambda signal=signal: _delivered(make, signal))
    assert make.count("SELECT count(*) FROM delivery_attempts") == attempts + 2
    assert len(failing.requests) == requests
    assert worker_metric(worker, "webhooks_delivery_transitions_total",
                   **{"from": "pending", "to": "delivering"}) == claims + 2
    assert [make.row(id)["attempt_count"] for id in held] == [0] * 5
    assert {make.row(id)["status"] for id in held} == {"pending"}
    assert worker_metric(worker, "webhooks_circuit_transitions_total",
                   **{"from": "closed", "to": "open"}) == 1
    worker.measure_queue()  # the gauges' periodic refresh, now
    assert worker_metric(worker, "webhooks_suppressed_attempts", state="open") >= 5
    opened = [r for r in caplog.records if r.getMessage() == "circuit closed -> open"]
    assert opened and opened[0].config_id == bad.id


def test_a_probe_that_succeeds_closes_the_circuit_and_delivers_the_backlog(
        make, receiver_factory, start_worker, caplog):
    caplog.set_level(logging.INFO, logger="webhooks.health")
    answers = {"status": 503}
    receiver = receiver_factory(lambda request: Reply(status=answers["status"]))
    config = make.config(receiver.url)
    start_worker(**BREAKER, circuit_probe_interval=0.5, endpoint_ramp=0.5)
    ids = [make.event()[1][0] for _ in range(3)]
    wait_until(lambda: row(make, config.id)["state"] == "open")
    answers["status"] = 200
    wait_until(lambda: _delivered(make, *ids))
    assert row(make, config.id)["state"] == "healthy"
    messages = [r.getMessage() for r in caplog.records if r.name == "webhooks.health"]
    assert "circuit open -> half_open" in messages
    assert "circuit half_open -> closed" in messages


def test_pause_and_resume_with_attempts_in_flight_lose_nothing_and_keep_order(
        make, receiver_factory, start_worker):
    release = gevent.event.Event()

    def respond(request):
        release.wait(PATIENCE)
        return Reply()

    receiver = receiver_factory(respond)
    beacon = receiver_factory()
    config = make.config(receiver.url, event_types=["paused"], max_in_flight=2)
    make.config(beacon.url, event_types=["beacon"])
    start_worker(endpoint_ramp=3600.0)  # after the resume: one at a time, in order
    ids = [make.event(type="paused")[1][0] for _ in range(6)]
    in_flight = receiver.wait_for(2)
    assert health.pause(make.pool, PLATFORM, config.id, reason="test")
    release.set()
    wait_until(lambda: _delivered(make, *ids[:2]))
    _, (signal,) = make.event(type="beacon")
    wait_until(lambda: _delivered(make, signal))
    assert [make.row(id)["status"] for id in ids[2:]] == ["pending"] * 4
    assert [make.row(id)["attempt_count"] for id in ids[2:]] == [0] * 4
    assert len(receiver.requests) == 2
    assert health.resume(make.pool, PLATFORM, config.id, reason="test")
    wait_until(lambda: _delivered(make, *ids))
    event_ids = [make.row(id)["event_id"] for id in ids]
    assert sorted(_event_id(r) for r in in_flight) == sorted(event_ids[:2])
    assert [_event_id(r) for r in receiver.requests[2:]] == event_ids[2:]
    assert row(make, config.id)["in_flight"] == 0


def _delivering(make, config_id: str) -> int:
    return make.count("SELECT count(*) FROM deliveries WHERE config_id = %s"
                      " AND status = 'delivering'", (config_id,))


def _hang_then(status: int, hanging: int = 2):
    """A responder whose first `hanging` requests wait for the returned event; the rest
    answer `status` at once."""
    release = gevent.event.Event()
    seen = []

    def respond(request):
        seen.append(request)
        if len(seen) <= hanging:
            release.wait(PATIENCE)
        return Reply(status=status)

    return respond, release


WORKER = {"dispatch_concurrency": 4, "endpoint_concurrency": 2, "endpoint_ramp": 3600.0,
          "retry_period": 0.2, "circuit_failures": 2, "circuit_probe_interval": 3600.0,
          "circuit_max_probe_interval": 3600.0, "min_backoff": 3600.0, "max_backoff": 3600.0}


@dataclasses.dataclass
class Queued:
    """A worker sending two requests of a config (hanging) with more claimed behind them."""

    receiver: Any
    release: gevent.event.Event
    config: Any
    ids: list[int]  # the config's eight deliveries
    queued: set[int]  # those claimed and waiting behind the two hung sends


def _queued_behind_two_hung_sends(make, receiver_factory, start_worker, status: int) -> Queued:
    """Start a worker on eight deliveries of a config whose first two requests hang (then
    answer `status`, as the rest do at once); wait until it holds at least two more claimed
    behind them (its share is two sends at once)."""
    respond, release = _hang_then(status)
    receiver = receiver_factory(respond)
    config = make.config(receiver.url, event_types=["held"])
    start_worker(**WORKER)
    ids = [make.event(type="held")[1][0] for _ in range(8)]
    receiver.wait_for(2)
    wait_until(lambda: _delivering(make, config.id) >= 4)
    sent = {_event_id(r) for r in receiver.requests}
    queued = {id for id in make.column("SELECT id FROM deliveries WHERE config_id = %s"
                                       " AND status = 'delivering'", (config.id,))
              if make.row(id)["event_id"] not in sent}
    assert len(queued) >= 2
    return Queued(receiver, release, config, ids, queued)


def test_a_pause_hands_back_what_a_worker_queued_and_sends_none_of_it(
        make, receiver_factory, start_worker):
    held = _queued_behind_two_hung_sends(make, receiver_factory, start_worker, 200)
    receiver, release, config, ids, queued = (held.receiver, held.release, held.config,
                                              held.ids, held.queued)
    assert health.pause(make.pool, PLATFORM, config.id, reason="test")
    wait_until(lambda: _delivering(make, config.id) == 2)  # the queued went back
    assert {make.row(id)["status"] for id in queued} == {"pending"}
    release.set()
    wait_until(lambda: _delivering(make, config.id) == 0)
    assert len(receiver.requests) == 2  # the two in flight when it paused, no more
    assert sorted(make.row(id)["status"] for id in ids) == ["pending"] * 6 + ["succeeded"] * 2
    assert sum(make.row(id)["attempt_count"] for id in ids) == 2
    assert row(make, config.id)["in_flight"] == 0
    assert health.resume(make.pool, PLATFORM, config.id, reason="test")
    wait_until(lambda: _delivered(make, *ids))
    # Nothing lost, nothing sent twice, and in due order: the handed-back ones kept their place.
    sent = [_event_id(r) for r in receiver.requests]
    event_ids = [make.row(id)["event_id"] for id in ids]
    assert sorted(sent) == sorted(event_ids)
    assert sent[2:] == [e for e in event_ids if e not in sent[:2]]


def test_a_circuit_opened_by_another_worker_hands_back_what_this_one_queued(
        make, receiver_factory, start_worker):
    held = _queued_behind_two_hung_sends(make, receiver_factory, start_worker, 503)
    receiver, release, config, ids, queued = (held.receiver, held.release, held.config,
                                              held.ids, held.queued)
    start_worker(**WORKER)  # takes what is left; its requests fail at once: the circuit opens
    wait_until(lambda: row(make, config.id)["state"] == "open")
    wait_until(lambda: _delivering(make, config.id) == 2)  # only the hung two
    assert {make.row(id)["status"] for id in queued} == {"pending"}
    assert {make.row(id)["attempt_count"] for id in queued} == {0}
    sent = {_event_id(r) for r in receiver.requests}
    assert not sent & {make.row(id)["event_id"] for id in queued}
    release.set()
    wait_until(lambda: _delivering(make, config.id) == 0)
    assert {make.row(id)["status"] for id in ids} == {"pending"}  # all held, none lost


def test_a_configs_own_cap_raises_its_share_of_a_worker_as_well_as_lowering_it(
        make, receiver_factory, start_worker):
    respond, release = _hang_then(200, hanging=100)
    raised = receiver_factory(respond)
    lowered = receiver_factory(respond)
    beacon = receiver_factory()
    make.config(raised.url, event_types=["raised"], max_in_flight=4)
    make.config(lowered.url, event_types=["lowered"], max_in_flight=1)
    make.config(beacon.url, event_types=["beacon"])
    start_worker(dispatch_concurrency=8, endpoint_concurrency=2, retry_period=0.2)
    for _ in range(6):
        make.event(type="raised")
        make.event(type="lowered")
    raised.wait_for(4)  # four at once, though the worker's default is two
    lowered.wait_for(1)
    _, (signal,) = make.event(type="beacon")  # sent by a later claim: beyond the caps, the
    wait_until(lambda: _delivered(make, signal))  # held ones would have gone before it
    assert (len(raised.requests), len(lowered.requests)) == (4, 1)
    release.set()


def test_an_endpoint_answering_410_gone_deactivates_its_config(make, receiver_factory,
                                                              start_worker):
    receiver = receiver_factory(lambda request: Reply(status=410))
    config = make.config(receiver.url, max_in_flight=1)
    ids = [make.event()[1][0] for _ in range(3)]  # before the first answer deactivates it
    worker = start_worker()
    wait_until(lambda: not configs.get(make.pool, PLATFORM, config.id).active)
    assert row(make, config.id)["reason"] == "endpoint answered 410 Gone"
    wait_until(lambda: {make.row(id)["status"] for id in ids} <= {"failed", "cancelled"})
    assert make.row(ids[0])["status"] == "failed"
    assert "cancelled" in {make.row(id)["status"] for id in ids}
    assert worker_metric(worker, "webhooks_configs_deactivated_total", reason="gone") == 1


def test_rate_limited_deliveries_that_queued_in_a_worker_still_go_at_the_rate(
        make, receiver_factory, start_worker):
    """Claimed at the rate, they wait behind a hung config's sends for the worker's send
    slots; once the slots free, they go out one interval apart, not together."""
    release = gevent.event.Event()
    hung = receiver_factory(lambda request: (release.wait(PATIENCE), Reply())[1])
    arrivals: list[float] = []

    def respond(request):
        arrivals.append(time.monotonic())
        return Reply()

    limited = receiver_factory(respond)
    make.config(hung.url, event_types=["hung"])
    rate = 5.0
    config = make.config(limited.url, event_types=["limited"], rate_per_second=rate)
    start_worker(dispatch_concurrency=2, endpoint_concurrency=2)
    make.event(type="hung")
    make.event(type="hung")
    hung.wait_for(2)  # both send slots taken
    ids = [make.event(type="limited")[1][0] for _ in range(4)]
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE config_id = %s AND "
                                  "status = 'delivering'", (config.id,)) >= 2)
    release.set()
    wait_until(lambda: _delivered(make, *ids))
    assert len(arrivals) == len(ids)
    # Spaced when they start; an arrival is later by the request's own latency, which
    # varies on a busy machine: no two together, and the rate over the whole run.
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 0.5 / rate, gaps
    assert arrivals[-1] - arrivals[0] >= 0.9 * (len(ids) - 1) / rate, gaps


def test_a_send_waiting_for_its_rate_is_handed_back_when_its_config_is_paused(
        make, receiver_factory, start_worker):
    """Two deliveries of a rate-limited config queued behind a hung config's sends: when the
    slots free, the first goes and the second waits one interval for the rate. The config is
    paused meanwhile: the second goes back unsent."""
    release = gevent.event.Event()
    hung = receiver_factory(lambda request: (release.wait(PATIENCE), Reply())[1])
    rate = 0.5  # one send every two seconds
    config = make.config(event_types=["limited"], rate_per_second=rate)

    def respond(request):
        health.pause(make.pool, PLATFORM, config.id, reason="paused while the next one waits")
        return Reply()

    limited = receiver_factory(respond)
    configs.update(make.pool, PLATFORM, config.id, endpoint=limited.url)
    make.config(hung.url, event_types=["hung"])
    start_worker(dispatch_concurrency=2, endpoint_concurrency=2)
    make.event(type="hung")
    make.event(type="hung")
    hung.wait_for(2)  # both send slots taken
    first, second = (make.event(type="limited")[1][0] for _ in range(2))
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE config_id = %s AND "
                                  "status = 'delivering'", (config.id,)) == 2)
    release.set()
    wait_until(lambda: {make.row(first)["status"], make.row(second)["status"]} == {
        "succeeded", "pending"})
    assert len(limited.requests) == 1
    (waited,) = [id for id in (first, second) if make.row(id)["status"] == "pending"]
    assert make.row(waited)["attempt_count"] == 0 and make.attempts(waited) == []


def test_a_rate_limit_holds_across_workers(make, receiver_factory, start_worker):
    arrivals: list[float] = []

    def respond(request):
        arrivals.append(time.monotonic())
        return Reply()

    receiver = receiver_factory(respond)
    rate = 4.0
    config = make.config(receiver.url, rate_per_second=rate)
    start_worker()
    start_worker()
    ids = [make.event()[1][0] for _ in range(8)]
    wait_until(lambda: _delivered(make, *ids))
    # Spacing can only grow on a slow machine: the rate is a floor on the time taken.
    assert arrivals[-1] - arrivals[0] >= 0.8 * (len(ids) - 1) / rate
    assert make.count("SELECT count(*) FROM delivery_attempts") == len(ids)
    assert row(make, config.id)["in_flight"] == 0


def test_the_in_flight_gauge_counts_each_worker_s_own_so_the_sum_is_the_fleet_s(
        make, receiver_factory, start_worker):
    hung = receiver_factory(lambda request: Reply(action="hang"))
    config = make.config(hung.url, event_types=["hangs"], max_in_flight=3)
    hanging = {"http_timeout": 3600.0, "claim_timeout": 4 * 3600.0, "shutdown_timeout": 1.0}
    first, second = start_worker(**hanging), start_worker(**hanging)
    for _ in range(5):
        make.event(type="hangs")
    hung.wait_for(3)  # the cap: three requests out, across both workers
    exported = []
    for worker in (first, second):
        worker.measure_queue()  # the gauges' periodic refresh, now
        exported.append(worker_metric(worker, "webhooks_config_in_flight", config_id=config.id))
        assert exported[-1] == len(worker.dispatcher.inflight)
    assert sum(exported) == 3


def test_pause_and_resume_leave_a_log_line_with_their_reason(settings, make, caplog):
    caplog.set_level(logging.INFO, logger="webhooks.health")
    config = make.config()
    api = LocalApi(settings, make.pool)  # the API's own rules, as the on-call commands run it
    for mutation in ("pauseConfig", "pauseConfig", "resumeConfig"):
        api.run(f'mutation {{ {mutation}(id: "{config.id}", reason: "on call") {{ changed }} }}')
    lines = [(r.getMessage(), r.config_id, r.reason) for r in caplog.records
             if r.name == "webhooks.health"]
    assert [(id, reason) for _, id, reason in lines] == [(config.id, "on call")] * 2  # no no-op
    assert [message for message, _, _ in lines] == ["config paused", "config resumed"]


def test_a_hung_endpoint_holds_its_share_of_a_worker_and_no_more(make, receiver_factory,
                                                                 start_worker):
    """With four send slots and a share of two, the hung endpoint gets two requests; the
    worker claims no more of it while they hang, so the fast endpoint's events all go."""
    hung = receiver_factory(lambda request: Reply(action="hang"))
    fast = receiver_factory()
    stuck = make.config(hung.url, event_types=["hangs"])
    make.config(fast.url, event_types=["flows"])
    for _ in range(20):
        make.event(type="hangs")
    worker = start_worker(dispatch_concurrency=4, endpoint_concurrency=2, http_timeout=3600.0,
                          claim_timeout=4 * 3600.0, shutdown_timeout=1.0)
    hung.wait_for(2)
    for _ in range(10):
        make.event(type="flows")
    fast.wait_for(10)
    assert len(hung.requests) == 2
    held = make.count("SELECT count(*) FROM deliveries WHERE config_id = %s "
                      "AND status = 'delivering'", (stuck.id,))
    assert held <= HOLD * 2  # what is sending, and at most its shares waiting behind it
    assert worker.dispatcher._queue.saturated() == {stuck.id}

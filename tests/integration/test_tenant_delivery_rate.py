"""A tenant's deliveriesPerSecond with real workers and receivers: its deliveries, over all its
configs together, arrive at the rate across workers, each with one attempt, while another
tenant's, published just after, arrive at once."""

from __future__ import annotations

import time

from db import tenants
from tests.helpers import wait_until
from tests.receivers import Reply

RATE = 10.0  # deliveries a second; a claim takes a tenth of a second's worth, at least one


def _recording(receiver_factory, arrivals: list[float]):
    def respond(request):
        arrivals.append(time.monotonic())
        return Reply()

    return receiver_factory(respond)


def test_a_tenants_delivery_rate_holds_over_its_configs_and_workers_and_slows_no_one_else(
        make, receiver_factory, start_worker):
    limited_arrivals: list[float] = []
    free_arrivals: list[float] = []
    limited_receiver = _recording(receiver_factory, limited_arrivals)
    free_receiver = _recording(receiver_factory, free_arrivals)
    limited = tenants.create(make.pool, uid="limited", deliveries_per_second=RATE)
    free = tenants.create(make.pool, uid="free")
    for tenant, receiver, kind in ((limited, limited_receiver, "l"), (free, free_receiver, "f")):
        for _ in range(30):  # thirty configs each, none limited itself
            make.config(receiver.url, event_types=[kind], tenant_id=tenant.id)
    start_worker()
    start_worker()
    _, limited_ids = make.event(type="l", tenant_id=limited.id)
    _, free_ids = make.event(type="f", tenant_id=free.id)
    everything = limited_ids + free_ids
    wait_until(lambda: all(make.row(id)["status"] == "succeeded" for id in everything),
               timeout=60)
    assert len(limited_arrivals) == len(limited_ids) == 30
    # The rate is a floor on the time the limited tenant's deliveries took (a slow machine
    # only spreads them more), and no second held more than the rate and a claim's burst.
    span = limited_arrivals[-1] - limited_arrivals[0]
    assert span >= 0.8 * (len(limited_arrivals) - 1) / RATE, span
    busiest = max(sum(1 for t in limited_arrivals if start <= t < start + 1.0)
                  for start in limited_arrivals)
    assert busiest <= 1.5 * RATE, busiest
    # The other tenant was not held back: all of its deliveries arrived while the limited
    # tenant's were still less than half through.
    assert len(free_arrivals) == 30
    assert sum(1 for t in limited_arrivals if t <= free_arrivals[-1]) < 15
    # Waiting spent nothing: one attempt each.
    assert make.count("SELECT count(*) FROM delivery_attempts") == len(everything)

"""Claims are fair by tenant, then by config within it; a tenant's deliveriesPerSecond holds
its deliveries back at the claim (pending, no attempt spent) and no other tenant's; a claim
locks only the deliveries it takes."""

from __future__ import annotations

from db import deliveries, tenants
from tests.endpoint_health import RULES, claim, events_for


def _backlogged_tenant(make, uid: str, configs: int, events: int) -> tuple[int, list]:
    """A tenant with `configs` configs of type `uid`, each with `events` deliveries due."""
    tenant = tenants.create(make.pool, uid=uid)
    made = [make.config(event_types=[uid], tenant_id=tenant.id) for _ in range(configs)]
    for _ in range(events):
        make.event(type=uid, tenant_id=tenant.id)
    return tenant.id, made


def test_a_tenant_with_one_config_is_claimed_in_the_first_claim_beside_one_with_many(make):
    """Sixty configs of one tenant, two deliveries due each, all older than the one delivery
    of another tenant's only config: the first claim of ten takes it. (By config alone, it
    would wait behind the sixty configs' turns: six claims.)"""
    _backlogged_tenant(make, "busy", configs=60, events=2)
    quiet = tenants.create(make.pool, uid="quiet")
    config = make.config(event_types=["quiet"], tenant_id=quiet.id)
    (waiting,) = events_for(make, config, 1)
    claimed = claim(make, limit=10)
    assert waiting in [c.id for c in claimed]
    assert len(claimed) == 10
    assert {c.tenant_id for c in claimed} == {quiet.id, claimed[-1].tenant_id}


def test_tenants_share_a_claim_whatever_their_numbers_of_configs(make):
    """A tenant with thirty configs and one with a single config, both backlogged: a claim of
    ten takes five of each, the many-config tenant's five from five of its configs."""
    many, _ = _backlogged_tenant(make, "many", configs=30, events=2)
    one, _ = _backlogged_tenant(make, "one", configs=1, events=20)
    claimed = claim(make, limit=10)
    by_tenant = [c.tenant_id for c in claimed]
    assert by_tenant.count(many) == by_tenant.count(one) == 5
    assert len({c.config_id for c in claimed if c.tenant_id == many}) == 5


def test_claims_serve_every_tenant_in_turn(make):
    """Twelve tenants of one config each and one of a hundred configs, all with something due:
    claims of four serve each tenant once before any twice."""
    big, _ = _backlogged_tenant(make, "big", configs=100, events=1)
    small = [_backlogged_tenant(make, f"small-{n}", configs=1, events=3)[0] for n in range(12)]
    served: list[int] = []
    for _ in range(13 // 4 + 1):
        served += [c.tenant_id for c in claim(make, limit=4)]
    assert sorted(served[:13]) == sorted([big, *small])


def test_a_tenant_over_its_delivery_rate_waits_with_nothing_spent_and_others_go_on(make):
    """At two deliveries a second (a claim takes a tenth of a second's worth, at least one),
    a claim takes one of the limited tenant's five and all of the other tenant's; the next
    claim takes none of it, and its deliveries stay pending with no attempt; the next-due
    check says when its rate allows the next."""
    limited = tenants.create(make.pool, uid="limited", deliveries_per_second=2.0)
    other = tenants.create(make.pool, uid="other")
    held = events_for(make, make.config(event_types=["l"], tenant_id=limited.id), 5)
    free = events_for(make, make.config(event_types=["o"], tenant_id=other.id), 5)
    first = claim(make, limit=50)
    assert sorted(c.id for c in first if c.tenant_id == other.id) == free
    assert [c.id for c in first if c.tenant_id == limited.id] == held[:1]
    assert claim(make, limit=50) == []
    assert {make.row(id)["status"] for id in held[1:]} == {"pending"}
    assert [make.row(id)["attempt_count"] for id in held[1:]] == [0] * 4
    until = deliveries.seconds_until_next_due(make.pool, RULES)
    assert until is not None and 0 < until <= 0.5


def test_a_raised_delivery_rate_and_a_removed_one_let_the_tenant_go_on(make):
    limited = tenants.create(make.pool, uid="limited", deliveries_per_second=0.01)
    held = events_for(make, make.config(event_types=["l"], tenant_id=limited.id), 30)
    assert len(claim(make, limit=50)) == 1
    assert claim(make, limit=50) == []  # the next one in 100 s
    tenants.update(make.pool, "limited", deliveries_per_second=tenants.CLEAR)
    # The schedule already taken still stands: the removed rate frees the tenant at its end.
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE tenant_turns SET next_send_at = now() WHERE tenant_id = %s",
                       (limited.id,))
    assert len(claim(make, limit=50)) == 29
    assert {make.row(id)["status"] for id in held} == {"delivering"}


def test_a_claim_locks_only_the_deliveries_it_takes(make):
    """Ten configs with thirty deliveries due each: a claim of ten reads each config's due
    deliveries without a lock and locks the ten it takes, not the three hundred (a lock
    marks the row it locks, for good: none of the pending ones carries a mark)."""
    for n in range(10):
        events_for(make, make.config(event_types=[f"t{n}"]), 30)
    assert len(claim(make, limit=10)) == 10
    locked = make.count("SELECT count(*) FROM deliveries WHERE status = 'pending' "
                        "AND xmax <> 0")
    assert locked == 0

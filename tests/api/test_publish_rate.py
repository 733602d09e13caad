"""publishEvent over a tenant's eventsPerSecond: RATE_LIMITED with retryAfter, HTTP 429 with
Retry-After, nothing stored (a broadcast all or nothing); no limit, no refusal.

A rate of 0.01 a second allows one event, then one per 100 s: within a test, exactly one.
"""

from __future__ import annotations

import math

import gevent
import pytest
import requests

from db import tokens
from tests.api.test_tenants import CREATE_CONFIG, CREATE_TENANT, PUBLISH, config_input, tenant_api
from tests.helpers import PATIENCE, web_process

SLOW = 0.01  # events a second: a burst of one, then one per 100 s
UPDATE_TENANT = """mutation ($uid: String!, $input: UpdateTenantInput!) {
  updateTenant(uid: $uid, input: $input) { uid limits { eventsPerSecond } } }"""


def tenant(api, uid: str, events_per_second: float | None = None) -> None:
    api.data(CREATE_TENANT, {"input": {"uid": uid,
                                       "limits": {"eventsPerSecond": events_per_second}}})
    api.data(CREATE_CONFIG, {"input": config_input(uid, "order.paid")})


def publish(api, id: str, **target):
    """POST a publish of `id` (to `tenant` or `tenants`); return the raw response."""
    return api.post(PUBLISH, {"input": {"type": "order.paid", "id": id, "payload": {},
                                        **target}})


def assert_rate_limited(response, uids: list[str]) -> float:
    """Check a RATE_LIMITED answer: 429, Retry-After its retryAfter rounded up; return it."""
    body = response.get_json()
    assert response.status_code == 429, body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "RATE_LIMITED"
    retry_after = error["extensions"]["retryAfter"]
    assert isinstance(retry_after, (int, float)) and 0 < retry_after <= 1 / SLOW
    assert response.headers["Retry-After"] == str(math.ceil(retry_after))
    assert all(repr(uid) in error["message"] for uid in uids), error["message"]
    assert body["data"] is None
    return retry_after


def test_over_its_rate_a_publish_is_refused_with_429_and_nothing_is_stored(api, make):
    tenant(api, "slow", SLOW)
    assert publish(api, "first", tenant="slow").status_code == 200
    assert_rate_limited(publish(api, "second", tenant="slow"), ["slow"])
    assert make.column("SELECT id FROM events") == ["first"]
    assert make.count("SELECT count(*) FROM deliveries") == 1
    # Publishing an event stored before takes no slot: it answers as a duplicate.
    again = api.data(PUBLISH, {"input": {"type": "order.paid", "id": "first", "payload": {},
                                         "tenant": "slow"}})["publishEvent"]
    assert again["duplicate"] is True


def test_a_tenant_token_is_refused_alike(client, pool, api, make):
    tenant(api, "slow", SLOW)
    own = tenant_api(client, pool, "slow")
    assert publish(own, "first").status_code == 200
    assert_rate_limited(publish(own, "second"), ["slow"])
    assert make.column("SELECT id FROM events") == ["first"]


def test_a_broadcast_over_one_tenants_rate_stores_nothing_for_any(api, make):
    tenant(api, "free")
    tenant(api, "slow", SLOW)
    tenant(api, "spare", SLOW)
    assert publish(api, "first", tenant="slow").status_code == 200
    assert_rate_limited(publish(api, "all", tenants=["free", "spare", "slow"]), ["slow"])
    assert make.column("SELECT id FROM events") == ["first"]
    assert make.count("SELECT count(*) FROM deliveries") == 1
    # The refused broadcast took nothing of the rate of the tenant that had room.
    assert publish(api, "own", tenant="spare").status_code == 200
    assert_rate_limited(publish(api, "both", tenants=["spare", "slow"]), ["spare", "slow"])


def test_without_a_limit_publishing_is_never_refused(api, make):
    tenant(api, "free")
    tenant(api, "lifted", SLOW)
    for n in range(30):
        assert publish(api, f"default-{n}").status_code == 200
        assert publish(api, f"free-{n}", tenant="free").status_code == 200
    assert publish(api, "lifted-0", tenant="lifted").status_code == 200
    assert publish(api, "lifted-1", tenant="lifted").status_code == 429
    api.data(UPDATE_TENANT, {"uid": "lifted", "input": {"limits": {"eventsPerSecond": None}}})
    for n in range(1, 30):
        assert publish(api, f"lifted-{n}", tenant="lifted").status_code == 200
    assert make.count("SELECT count(*) FROM events") == 90


def test_other_refusals_of_a_publish_keep_their_status(api):
    tenant(api, "slow", SLOW)
    assert publish(api, "first", tenant="slow").status_code == 200
    for target in ({"tenant": "nobody"}, {"tenants": ["slow", "nobody"]}):
        response = publish(api, "second", **target)
        assert response.status_code == 200 and "Retry-After" not in response.headers
        assert response.get_json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"


@pytest.mark.slow  # a long proof (20-45 s): run by CI after the default tier
def test_concurrent_publishes_through_two_web_processes_never_exceed_the_rate(
        database_url, pool, make, api):
    tenant(api, "slow", SLOW)
    tenant(api, "x", SLOW)
    tenant(api, "y", SLOW)
    _, token = tokens.create(pool, name="concurrent", tenant_id=None, role="operator")
    with web_process(database_url) as (one, _), web_process(database_url) as (two, _):

        def post(url: str, id: str, target: dict) -> requests.Response:
            body = {"query": PUBLISH, "variables": {"input": {
                "type": "order.paid", "id": id, "payload": {}, **target}}}
            return requests.post(f"{url}/graphql", json=body, timeout=PATIENCE,
                                 headers={"Authorization": f"Bearer {token}"})

        singles = [gevent.spawn(post, (one, two)[n % 2], f"single-{n}", {"tenant": "slow"})
                   for n in range(40)]
        # Broadcasts naming two limited tenants in either order: one lock order, no deadlock.
        broadcasts = [gevent.spawn(post, (one, two)[n % 2], f"both-{n}",
                                   {"tenants": ["x", "y"] if n % 3 else ["y", "x"]})
                      for n in range(40)]
        gevent.joinall(singles + broadcasts, raise_error=True)
    for jobs in (singles, broadcasts):
        statuses = sorted(job.value.status_code for job in jobs)
        assert statuses == [200] + [429] * 39, [job.value.text for job in jobs]
        refused = [job.value for job in jobs if job.value.status_code == 429]
        assert {r.json()["errors"][0]["extensions"]["code"] for r in refused} == {"RATE_LIMITED"}
        assert all(int(r.headers["Retry-After"]) >= 1 for r in refused)
    assert make.count("SELECT count(*) FROM events WHERE tenant_id = "
                      "(SELECT id FROM tenants WHERE uid = 'slow')") == 1
    (both,) = make.column("SELECT DISTINCT id FROM events WHERE id LIKE %s", ("both-%",))
    assert make.count("SELECT count(*) FROM events WHERE id = %s", (both,)) == 2

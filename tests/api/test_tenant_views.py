"""What the dashboard's tenant views ask of the API: the attempts chart and the configs needing
a look narrowed to one tenant (`tenant:`), and the tenants of a listed page read in one
statement, not one a row."""

from __future__ import annotations

import pytest

from db import deliveries, tenants
from graphql_schema import tenancy
from tests.endpoint_health import RULES, claim, result

HISTORY = """query ($tenant: String) {
  attemptHistory(hours: 1, bucketMinutes: 60, tenant: $tenant) {
    buckets { attempts } configs { configId }
  }
}"""
ATTENTION = """query ($tenant: String) {
  configsNeedingAttention(tenant: $tenant) { config { id tenant { uid } } failures }
}"""


@pytest.fixture
def two_tenants(make) -> dict[str, str]:
    """Tenants acme and globex, one config each whose one delivery failed an attempt; return
    the config ids by uid."""
    made = {}
    for uid in ("acme", "globex"):
        tenant = tenants.create(make.pool, uid=uid, name=uid.title())
        config = make.config(name=f"{uid}-hooks", tenant_id=tenant.id)
        make.delivery(config)
        made[uid] = config.id
    deliveries.record_and_settle(make.pool, [result(one, 503) for one in claim(make)], RULES)
    return made


def test_the_attempts_chart_and_the_configs_needing_a_look_narrow_to_one_tenant(api,
                                                                               two_tenants):
    everyone = api.data(HISTORY)["attemptHistory"]
    assert sum(bucket["attempts"] for bucket in everyone["buckets"]) == 2
    acme = api.data(HISTORY, {"tenant": "acme"})["attemptHistory"]
    assert sum(bucket["attempts"] for bucket in acme["buckets"]) == 1
    assert [config["configId"] for config in acme["configs"]] == [two_tenants["acme"]]

    listed = api.data(ATTENTION)["configsNeedingAttention"]
    assert {row["config"]["id"] for row in listed} == set(two_tenants.values())
    narrowed = api.data(ATTENTION, {"tenant": "globex"})["configsNeedingAttention"]
    assert [(row["config"]["id"], row["config"]["tenant"]["uid"], row["failures"])
            for row in narrowed] == [(two_tenants["globex"], "globex", 1)]

    for query in (HISTORY, ATTENTION):
        assert api.code(query, {"tenant": "initech"}) == "NOT_FOUND"


@pytest.fixture
def tenants_read(monkeypatch) -> list[list[int]]:
    """Record the tenant ids of every read of tenants by id."""
    reads = []
    read = tenancy.tenants.by_ids

    def recorded(pool, scope, ids):
        reads.append(list(ids))
        return read(pool, scope, ids)

    monkeypatch.setattr(tenancy.tenants, "by_ids", recorded)
    return reads


@pytest.mark.parametrize("listing", [
    "{ configs { edges { node { tenant { uid } } } } }",
    "{ deliveries { edges { node { tenant { uid } } } } }",
    "{ configsNeedingAttention { config { tenant { uid } } } }",
])
def test_the_tenants_of_a_listed_page_are_read_in_one_statement(api, make, tenants_read,
                                                                 listing):
    for uid in ("one", "two", "three"):
        config = make.config(tenant_id=tenants.create(make.pool, uid=uid).id)
        make.delivery(config)
    deliveries.record_and_settle(make.pool, [result(one, 503) for one in claim(make)], RULES)
    found = api.data(listing)
    assert sorted(str(found).count(f"'uid': '{uid}'") for uid in ("one", "two", "three")) \
        == [1, 1, 1]
    assert len(tenants_read) == 1 and len(tenants_read[0]) == 3

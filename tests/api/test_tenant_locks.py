"""A tenant that names another tenant's config or delivery takes none of its row locks.

The answer is NOT_FOUND either way; but a change that first locked the rows it names (the
config, its pending deliveries, its health row) and only then found them out of its scope
would hold up the other tenant's claims, ingests and changes each time it is called, and
wait for the other tenant's own locks. Each operation below is run by tenant A while a
transaction of tenant B's holds its config's row: A must answer at once, waiting for nothing.
"""

from __future__ import annotations

import gevent
import psycopg2
import pytest

from db import tenants, tokens
from tests.api.conftest import Api
from tests.helpers import wait_until

LOCK_WAITERS = ("SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'")

# Each operation, with what it names: a config of B's or a delivery of B's.
OPERATIONS = {
    "deactivateConfig": ("mutation ($id: ID!) { deactivateConfig(id: $id) "
                         "{ cancelledDeliveries } }", "config"),
    "deleteConfig": ("mutation ($id: ID!) { deleteConfig(id: $id) { cancelledDeliveries } }",
                     "config"),
    "updateConfig": ('mutation ($id: ID!) { updateConfig(id: $id, input: {ordering: '
                     'UNORDERED}) { id } }', "config"),
    "replayDelivery": ("mutation ($id: ID!) { replayDelivery(id: $id) { action } }",
                       "delivery"),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_naming_another_tenants_rows_waits_for_none_of_its_locks(name, client, make, pool,
                                                                  database_url):
    a = tenants.create(pool, uid="a")
    b = tenants.create(pool, uid="b")
    as_a = Api(client, tokens.create(pool, name="a-ops", role="operator", tenant_id=a.id)[1])
    b_config = make.config(tenant_id=b.id, ordering="per_key")
    b_delivery = make.delivery(b_config)
    document, named = OPERATIONS[name]
    target = b_config.id if named == "config" else str(b_delivery)
    b_transaction = psycopg2.connect(database_url)
    b_transaction.cursor().execute("SELECT 1 FROM configs WHERE id = %s FOR UPDATE",
                                   (b_config.id,))
    request = gevent.spawn(as_a.code, document, {"id": target},
                           headers={"Idempotency-Key": "a-key"})
    try:
        wait_until(lambda: request.ready() or make.count(LOCK_WAITERS) > 0)
        assert request.ready(), f"{name} by tenant A waits for tenant B's lock"
        assert request.get() == "NOT_FOUND"
    finally:
        b_transaction.rollback()
        b_transaction.close()
        request.join()
    assert make.row(b_delivery)["status"] == "pending"

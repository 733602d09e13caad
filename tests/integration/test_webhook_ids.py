"""`webhook-id`: a key stored with each delivery, unique beyond one database, never changing."""

import re
import time

from db import deliveries
from db.adhoc import dsn_for
from db.pool import ConnectionPool
from tests.factories import Factories

KEY = re.compile(r"msg_(?P<millis>[0-9a-f]{12})[0-9a-f]{32}")


def test_two_databases_never_give_the_same_delivery_the_same_id(
        make, server_dsn, database_factory, template_database):
    other_pool = ConnectionPool(dsn_for(server_dsn, database_factory(template=template_database)))
    try:
        other = Factories(other_pool)
        here = make.delivery()
        there = other.delivery()
        assert here == there  # the same number in each database ...
        assert make.row(here)["webhook_id"] != other.row(there)["webhook_id"]  # ... not the id
    finally:
        other_pool.close()


def test_the_id_starts_with_the_time_it_was_made(make):
    before = int(time.time() * 1000)
    webhook_id = make.row(make.delivery())["webhook_id"]
    after = int(time.time() * 1000)
    match = KEY.fullmatch(webhook_id)
    assert match, webhook_id
    assert before - 1000 <= int(match["millis"], 16) <= after + 1000  # clocks may differ a bit


def test_the_id_stays_the_same_across_claims(make, pool):
    delivery_id = make.delivery()
    stored = make.row(delivery_id)["webhook_id"]
    (claimed,) = deliveries.claim_due(pool, owner="w", limit=1)
    assert claimed.webhook_id == stored
    deliveries.release(pool, [(claimed.id, claimed.token)])
    (again,) = deliveries.claim_due(pool, owner="w", limit=1)
    assert again.webhook_id == stored


def test_a_delivery_stored_before_the_upgrade_gets_its_key_when_next_claimed(make, pool):
    delivery_id = make.delivery()
    make.set(delivery_id, webhook_id=None)  # as stored before the upgrade
    (claimed,) = deliveries.claim_due(pool, owner="w", limit=1)
    assert KEY.fullmatch(claimed.webhook_id)
    assert make.row(delivery_id)["webhook_id"] == claimed.webhook_id
    deliveries.release(pool, [(claimed.id, claimed.token)])
    (again,) = deliveries.claim_due(pool, owner="w", limit=1)
    assert again.webhook_id == claimed.webhook_id

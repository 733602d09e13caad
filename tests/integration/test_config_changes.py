"""Configuration changes while deliveries are pending or in flight."""

import gevent
from standardwebhooks.webhooks import Webhook

from db import configs
from db.scope import PLATFORM
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

HOUR = 3600.0


def test_deactivation_cancels_pending_and_reactivation_does_not_resurrect(make):
    config = make.config()
    ids = [make.event()[1][0] for _ in range(3)]
    change = configs.deactivate(make.pool, PLATFORM, config.id)
    assert change.cancelled == 3
    assert {make.row(i)["status"] for i in ids} == {"cancelled"}
    configs.activate(make.pool, PLATFORM, config.id)
    assert {make.row(i)["status"] for i in ids} == {"cancelled"}
    _, new = make.event()
    assert make.row(new[0])["status"] == "pending"


def test_deactivating_an_inactive_config_changes_nothing_and_says_so(make):
    config = make.config()
    assert configs.deactivate(make.pool, PLATFORM, config.id,
                              reason="endpoint answered 410 Gone").changed
    again = configs.deactivate(make.pool, PLATFORM, config.id)
    assert (again.changed, again.cancelled, again.config.active) == (False, 0, False)
    assert make.count("SELECT count(*) FROM config_health WHERE reason = %s",
                      ("endpoint answered 410 Gone",)) == 1


def test_deletion_cancels_pending_and_keeps_history(make):
    config = make.config()
    _, (delivery_id,) = make.event()
    assert configs.delete(make.pool, PLATFORM, config.id).cancelled == 1
    assert configs.get(make.pool, PLATFORM, config.id) is None
    assert make.row(delivery_id)["status"] == "cancelled"
    _, none = make.event()
    assert none == []


def test_inflight_failure_of_a_deactivated_config_becomes_cancelled(
        make, receiver_factory, start_worker):
    arrived = gevent.event.Event()
    release = gevent.event.Event()

    def respond(request):
        arrived.set()
        release.wait(PATIENCE)
        return Reply(500)

    receiver = receiver_factory(respond)
    config = make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=HOUR)
    arrived.wait(PATIENCE)
    assert make.row(delivery_id)["status"] == "delivering"
    assert configs.deactivate(make.pool, PLATFORM, config.id).cancelled == 0
    release.set()
    row = wait_until(lambda: (r := make.row(delivery_id))["status"] != "delivering" and r)
    assert row["status"] == "cancelled"
    assert row["next_attempt_at"] is None
    assert len(make.attempts(delivery_id)) == 1


def test_inflight_success_of_a_deactivated_config_stays_succeeded(
        make, receiver_factory, start_worker):
    arrived = gevent.event.Event()
    release = gevent.event.Event()

    def respond(request):
        arrived.set()
        release.wait(PATIENCE)
        return Reply(200)

    receiver = receiver_factory(respond)
    config = make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    start_worker()
    arrived.wait(PATIENCE)
    configs.deactivate(make.pool, PLATFORM, config.id)
    release.set()
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")


def test_attempts_use_the_current_endpoint_and_secret(make, receiver_factory, start_worker):
    old = receiver_factory(lambda request: Reply(503))
    new = receiver_factory()
    config = make.config(endpoint=old.url)
    _, (delivery_id,) = make.event()
    start_worker(min_backoff=0.3, max_backoff=0.3)
    old.wait_for(1)
    configs.update(make.pool, PLATFORM, config.id, endpoint=new.url)
    _, secret = configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=0)
    (request,) = new.wait_for(1)
    Webhook(secret).verify(request.body, request.headers)
    assert request.headers["webhook-attempt"] == "2"
    wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")


def test_rotation_grace_signs_with_every_unexpired_secret(make, receiver_factory, start_worker):
    receiver = receiver_factory()
    config = make.config(endpoint=receiver.url)
    first = make.secrets[config.id]
    _, second = configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=3600)
    _, third = configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=3600)
    make.event()
    start_worker()
    (request,) = receiver.wait_for(1)
    assert len(request.headers["webhook-signature"].split(" ")) == 3
    for secret in (third, second, first):
        Webhook(secret).verify(request.body, request.headers)


def test_pending_delivery_of_an_inactive_config_is_cancelled_not_sent(
        make, receiver, start_worker):
    config = make.config(endpoint=receiver.url)
    _, (delivery_id,) = make.event()
    with make.pool.transaction() as cursor:  # a state no API produces: repaired, not sent
        cursor.execute("UPDATE configs SET active = false WHERE id = %s", (config.id,))
    start_worker()
    wait_until(lambda: make.row(delivery_id)["status"] == "cancelled")
    assert receiver.requests == []
    assert make.count("SELECT count(*) FROM deliveries WHERE status = 'pending'") == 0

"""Nothing a worker claimed is sent after the world changed, NOTIFY or not (LISTEN off here, as
behind a pooler): a pause, an opened circuit, a deactivation, a deletion, a new endpoint or a
revoked secret hands back what the worker holds of the config unsent; and a claim that waited
so long it could go stale before its result is recorded goes back unsent too."""

from __future__ import annotations

import dataclasses

import gevent
import gevent.event
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from db import configs, health
from service.worker import Worker
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

SHARE = 2  # requests of the config the worker sends at once; it holds three shares
HELD = 3 * SHARE


def _open_circuit(make, config_id: str) -> None:
    """Open the config's circuit as another worker's breaker would."""
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE config_health SET circuit = 'open', opened_at = now(), "
                       "next_probe_at = now() + interval '1 hour', "
                       "held_since = coalesce(held_since, now()) WHERE config_id = %s",
                       (config_id,))


CHANGES = {
    "paused": lambda make, config, new_url: health.pause(make.pool, config.id, reason="ops"),
    "circuit opened": lambda make, config, new_url: _open_circuit(make, config.id),
    "deactivated": lambda make, config, new_url: configs.deactivate(make.pool, config.id),
    "deleted": lambda make, config, new_url: configs.delete(make.pool, config.id),
    "new endpoint": lambda make, config, new_url: configs.update(make.pool, config.id,
                                                                 endpoint=new_url),
    "secret revoked": lambda make, config, new_url: configs.rotate_secret(
        make.pool, config.id, grace_seconds=0),
}


@pytest.mark.parametrize("change", CHANGES)
def test_what_waits_to_be_sent_goes_back_unsent_once_its_config_changed(
        change, make, receiver_factory, start_worker):
    arrived = gevent.event.Event()
    release = gevent.event.Event()

    def hold(request):
        arrived.set()
        release.wait(PATIENCE)
        return Reply(200)

    old = receiver_factory(hold)
    new = receiver_factory()
    config = make.config(endpoint=old.url)
    old_secret = make.secrets[config.id]
    ids = [make.event()[1][0] for _ in range(HELD + 4)]
    start_worker(listen_notify=False, endpoint_concurrency=SHARE)
    wait_until(lambda: len(old.requests) == SHARE
               and make.count("SELECT count(*) FROM deliveries WHERE status = 'delivering'")
               == HELD)  # two sending, four claimed behind them

    outcome = CHANGES[change](make, config, new.url)
    # Handed back: only the two sends under way are still delivering.
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'delivering'") == SHARE)
    release.set()
    if change in ("paused", "circuit opened", "deactivated", "deleted"):
        # The two under way finish; nothing else of the config goes to anyone.
        wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                      "'delivering'") == 0)
        assert (len(old.requests), len(new.requests)) == (SHARE, 0)
        held = "pending" if change in ("paused", "circuit opened") else "cancelled"
        assert sorted(make.row(i)["status"] for i in ids) == sorted(
            ["succeeded"] * SHARE + [held] * (len(ids) - SHARE))
        return
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                  "'succeeded'") == len(ids))
    if change == "new endpoint":  # what was sent before the change, and nothing after
        assert (len(old.requests), len(new.requests)) == (SHARE, len(ids) - SHARE)
        return
    _, new_secret = outcome  # every request after the change is signed with the new one only
    after = old.requests[SHARE:]
    assert len(after) == len(ids) - SHARE
    for request in after:
        Webhook(new_secret).verify(request.body, request.headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(old_secret).verify(request.body, request.headers)


def test_claims_that_waited_too_long_to_be_sent_go_back_and_nothing_is_sent_twice(
        make, settings, receiver_factory):
    """Settings the validation refuses (a claim timeout shorter than three HTTP timeouts),
    to reach what it guards against: claims waiting behind slow sends long enough to be
    recovered by another worker while they are sent. They go back unsent instead."""
    receiver = receiver_factory(lambda request: Reply(200, delay=3.5))
    make.config(endpoint=receiver.url)
    ids = [make.event()[1][0] for _ in range(150)]
    loose = dataclasses.replace(settings, http_timeout=4.0, claim_timeout=6.5,
                                recovery_period=0.5, listen_notify=False)
    workers = [Worker(loose) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                      "'succeeded'") == len(ids), timeout=10 * PATIENCE)
    finally:
        for worker in workers:
            worker.stop()
    webhook_ids = [request.headers["webhook-id"] for request in receiver.requests]
    assert len(webhook_ids) == len(set(webhook_ids)) == len(ids)

"""Nothing a worker claimed is sent after the world changed, NOTIFY or not (LISTEN off here, as
behind a pooler): a pause, an opened circuit, a deactivation, a deletion, a new endpoint or a
revoked secret hands back what the worker holds of the config unsent; and a claim that waited
so long it could go stale before its result is recorded goes back unsent too."""

from __future__ import annotations

import collections
import dataclasses
import logging

import gevent
import gevent.event
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from db import configs, health
from db.scope import PLATFORM
from service.worker import Worker
from tests.helpers import PATIENCE, wait_until
from tests.receivers import Reply

SHARE = 2  # requests of the config the worker sends at once; it holds three shares
HELD = 3 * SHARE
ANSWER = 3.0  # seconds each answer takes in the test of claims that waited too long


def _open_circuit(make, config_id: str) -> None:
    """Open the config's circuit as another worker's breaker would."""
    with make.pool.transaction() as cursor:
        cursor.execute("UPDATE config_health SET circuit = 'open', opened_at = now(), "
                       "next_probe_at = now() + interval '1 hour', "
                       "held_since = coalesce(held_since, now()) WHERE config_id = %s",
                       (config_id,))


CHANGES = {
    "paused": lambda make, config, new_url: health.pause(make.pool, PLATFORM, config.id,
                                                         reason="ops"),
    "circuit opened": lambda make, config, new_url: _open_circuit(make, config.id),
    "deactivated": lambda make, config, new_url: configs.deactivate(make.pool, PLATFORM, config.id),
    "deleted": lambda make, config, new_url: configs.delete(make.pool, PLATFORM, config.id),
    "new endpoint": lambda make, config, new_url: configs.update(make.pool, PLATFORM, config.id,
                                                                 endpoint=new_url),
    "secret revoked": lambda make, config, new_url: configs.rotate_secret(
        make.pool, PLATFORM, config.id, grace_seconds=0),
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


@pytest.mark.slow  # a long proof (20-45 s): run by CI after the default tier
def test_claims_that_waited_too_long_to_be_sent_go_back_and_nothing_is_sent_twice(
        make, settings, receiver_factory, caplog):
    """Settings the validation refuses (a claim timeout shorter than three HTTP timeouts),
    to reach what it guards against: claims waiting behind slow sends long enough to be
    recovered by another worker while they are sent. They go back unsent instead.

    Each answer takes ANSWER seconds. A claim may be sent while younger than 7.5 - 4 - 2 =
    1.5 s, so only the first of the three shares a worker holds goes; sent unguarded, the
    third would start after two rounds (6 s) and end after the claim went stale (7.5 s),
    while another worker sends it again."""
    caplog.set_level(logging.WARNING, logger="webhooks.dispatcher")
    receiver = receiver_factory(lambda request: Reply(200, delay=ANSWER))
    make.config(endpoint=receiver.url)
    ids = [make.event()[1][0] for _ in range(4 * HELD)]
    loose = dataclasses.replace(settings, http_timeout=4.0, claim_timeout=7.5,
                                recovery_period=0.5, listen_notify=False,
                                endpoint_concurrency=SHARE)
    workers = [Worker(loose) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = "
                                      "'succeeded'") == len(ids), timeout=10 * PATIENCE)
    finally:
        for worker in workers:
            worker.stop()
    assert any("waited too long to be sent" in r.getMessage() for r in caplog.records)
    sent = collections.Counter(request.headers["webhook-id"] for request in receiver.requests)
    for id in ids:
        outcomes = [attempt["outcome"] for attempt in make.attempts(id)]
        # Each request is a recorded attempt, and a delivery reaches the receiver again only
        # as the retry of a send its worker gave up on (an answer slower than the timeout,
        # on a busy machine), never while a send of it is under way elsewhere.
        assert sent[make.row(id)["webhook_id"]] == len(outcomes), outcomes
        assert outcomes[-1] == "success" and set(outcomes[:-1]) <= {"timeout"}, outcomes
    assert sum(sent.values()) == sum(len(make.attempts(id)) for id in ids)

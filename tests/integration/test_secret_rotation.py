"""Rotated-out secrets: each signs until its own grace ends, at most the newest few."""

from __future__ import annotations

from datetime import timedelta

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from db import configs, deliveries
from db.configs import MAX_PREVIOUS_SECRETS
from db.errors import NotFound
from db.scope import PLATFORM
from service.dispatch import outgoing

HOUR = 3600.0


def rotate(make, config, times: int, *, grace_seconds: float = HOUR) -> list[str]:
    """Rotate `times` times; return every secret the config had, oldest first."""
    secrets = [make.secrets[config.id]]
    for _ in range(times):
        _, secret = configs.rotate_secret(make.pool, PLATFORM, config.id,
                                          grace_seconds=grace_seconds)
        secrets.append(secret)
    return secrets


def stored(make, config) -> list[tuple[str, timedelta]]:
    """Return the stored previous secrets, as stored, with the time each has left."""
    with make.pool.transaction() as cursor:
        cursor.execute(
            "SELECT entry ->> 'secret', (entry ->> 'expires_at')::timestamptz - now()"
            " FROM configs, jsonb_array_elements(previous_secrets) WITH ORDINALITY"
            " AS e (entry, position) WHERE id = %s ORDER BY position", (config.id,))
        return cursor.fetchall()


def signed_request(make) -> tuple[deliveries.Claimed, bytes, dict[str, str]]:
    """Publish an event, claim its delivery, and return it with the request it would send."""
    make.event()
    (claimed,) = deliveries.claim_due(make.pool, owner="test", limit=10)
    body = outgoing.body(claimed)
    return claimed, body, outgoing.headers(claimed, body)


def accepted(secrets: list[str], body: bytes, headers: dict[str, str]) -> list[bool]:
    """Return, for each secret, whether the standardwebhooks library accepts the request."""
    verdicts = []
    for secret in secrets:
        try:
            Webhook(secret).verify(body, headers)
        except WebhookVerificationError:
            verdicts.append(False)
        else:
            verdicts.append(True)
    return verdicts


def signatures(headers: dict[str, str]) -> int:
    return len(headers["webhook-signature"].split(" "))


def test_two_rotations_within_the_grace_sign_with_all_three_secrets(make):
    config = make.config()
    first, second, third = rotate(make, config, 2)
    claimed, body, headers = signed_request(make)
    assert claimed.previous_secrets == [second, first]
    assert signatures(headers) == 3
    assert accepted([third, second, first], body, headers) == [True, True, True]
    assert second not in repr(claimed) and first not in repr(claimed)


def test_a_later_rotation_keeps_the_expiry_of_earlier_secrets(make):
    config = make.config()
    first, second = rotate(make, config, 1, grace_seconds=2 * HOUR)
    [(_, first_left)] = stored(make, config)
    configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=HOUR)
    (newer, newer_left), (older, older_left) = stored(make, config)
    assert (newer, older) == (second, first)
    assert 0.99 * HOUR < newer_left.total_seconds() <= HOUR
    assert timedelta(0) <= first_left - older_left < timedelta(minutes=1)


def test_a_rotation_without_grace_drops_every_previous_secret(make):
    config = make.config()
    first, second = rotate(make, config, 1)
    _, third = configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=0)
    assert stored(make, config) == []
    claimed, body, headers = signed_request(make)
    assert claimed.previous_secrets == []
    assert signatures(headers) == 1
    assert accepted([third, second, first], body, headers) == [True, False, False]


def test_expired_previous_secrets_do_not_sign_and_go_at_the_next_rotation(make):
    config = make.config()
    first, second, third = rotate(make, config, 2)
    with make.pool.transaction() as cursor:  # the oldest one's grace ends
        cursor.execute(
            "UPDATE configs SET previous_secrets = jsonb_set(previous_secrets, '{1,expires_at}',"
            " to_jsonb(now() - interval '1 second')) WHERE id = %s", (config.id,))
    claimed, body, headers = signed_request(make)
    assert claimed.previous_secrets == [second]
    assert accepted([third, second, first], body, headers) == [True, True, False]
    configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=HOUR)
    assert [secret for secret, _ in stored(make, config)] == [third, second]


def test_at_most_the_newest_previous_secrets_sign(make):
    config = make.config()
    secrets = rotate(make, config, MAX_PREVIOUS_SECRETS + 2)
    current, previous = secrets[-1], secrets[-2::-1]  # previous: newest first
    claimed, body, headers = signed_request(make)
    assert claimed.previous_secrets == previous[:MAX_PREVIOUS_SECRETS]
    assert signatures(headers) == MAX_PREVIOUS_SECRETS + 1
    assert accepted([current, *previous], body, headers) == (
        [True] * (MAX_PREVIOUS_SECRETS + 1) + [False] * 2)


def test_rotating_back_to_a_previous_secret_lists_it_once(make):
    config = make.config()
    first, second = rotate(make, config, 1)
    configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=HOUR, secret=first)
    assert [secret for secret, _ in stored(make, config)] == [second]
    _, body, headers = signed_request(make)
    assert signatures(headers) == 2
    assert accepted([first, second], body, headers) == [True, True]


def test_rotating_a_deleted_config_is_not_found_and_changes_nothing(make):
    config = make.config()
    configs.delete(make.pool, PLATFORM, config.id)
    with pytest.raises(NotFound):
        configs.rotate_secret(make.pool, PLATFORM, config.id, grace_seconds=HOUR)
    assert stored(make, config) == []

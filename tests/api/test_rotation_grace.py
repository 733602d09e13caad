"""rotateConfigSecret's grace: 0 revokes the old secrets at once; the API shows their expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.test_secret_rotation import accepted, signatures, signed_request

ROTATE = """mutation ($id: ID!, $grace: Int) {
  rotateConfigSecret(id: $id, graceSeconds: $grace) {
    secret config { id previousSecretsExpireAt } } }"""
CONFIG = """query ($id: ID!) { config(id: $id) { previousSecretsExpireAt } }"""
LIST = "{ configs { edges { node { id previousSecretsExpireAt } } } }"
HOUR = 3600


def rotate(api, config_id: str, grace: int | None = None) -> dict:
    return api.data(ROTATE, {"id": config_id, "grace": grace})["rotateConfigSecret"]


def expiries(values: list[str]) -> list[datetime]:
    return [datetime.fromisoformat(value) for value in values]


def test_a_grace_keeps_the_old_secret_signing_until_the_time_shown(api, make):
    config = make.config()
    old = make.secrets[config.id]
    before = datetime.now(UTC)
    rotated = rotate(api, config.id, grace=HOUR)
    after = datetime.now(UTC)
    (expires,) = expiries(rotated["config"]["previousSecretsExpireAt"])
    slack = timedelta(seconds=5)  # the database's clock and ours
    assert before + timedelta(hours=1) - slack <= expires <= after + timedelta(hours=1) + slack
    assert api.data(CONFIG, {"id": config.id})["config"]["previousSecretsExpireAt"] == \
        rotated["config"]["previousSecretsExpireAt"]
    _, body, headers = signed_request(make)
    assert signatures(headers) == 2
    assert accepted([rotated["secret"], old], body, headers) == [True, True]


def test_a_grace_of_0_stops_every_old_secret_signing_at_once(api, make):
    config = make.config()
    first = make.secrets[config.id]
    second = rotate(api, config.id, grace=HOUR)["secret"]
    third = rotate(api, config.id)  # the default grace (24 h)
    assert len(third["config"]["previousSecretsExpireAt"]) == 2
    revoked = rotate(api, config.id, grace=0)
    assert revoked["config"]["previousSecretsExpireAt"] == []
    _, body, headers = signed_request(make)
    assert signatures(headers) == 1
    assert accepted([revoked["secret"], third["secret"], second, first], body, headers) == \
        [True, False, False, False]


def test_the_default_grace_is_the_setting(api, make):
    config = make.config()
    (expires,) = expiries(rotate(api, config.id)["config"]["previousSecretsExpireAt"])
    left = expires - datetime.now(UTC)
    assert timedelta(hours=23) < left <= timedelta(hours=24, seconds=5)


def test_configs_list_the_expiry_of_their_old_secrets_only_while_they_sign(api, make):
    rotated, fresh = make.config(), make.config()
    rotate(api, rotated.id, grace=HOUR)
    listed = {edge["node"]["id"]: edge["node"]["previousSecretsExpireAt"]
              for edge in api.data(LIST)["configs"]["edges"]}
    assert len(listed[rotated.id]) == 1 and listed[fresh.id] == []
    with make.pool.transaction() as cursor:  # the grace ends
        cursor.execute("UPDATE configs SET previous_secrets = jsonb_set(previous_secrets,"
                       " '{0,expires_at}', to_jsonb(now() - interval '1 second'))"
                       " WHERE id = %s", (rotated.id,))
    assert api.data(CONFIG, {"id": rotated.id})["config"]["previousSecretsExpireAt"] == []


@pytest.mark.parametrize("grace", [-1, 30 * 24 * HOUR + 1])
def test_a_grace_out_of_range_is_bad_input_and_changes_nothing(api, make, grace):
    config = make.config()
    error = api.error(ROTATE, {"id": config.id, "grace": grace})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "grace" in error["message"] and "2592000" in error["message"]
    _, body, headers = signed_request(make)
    assert accepted([make.secrets[config.id]], body, headers) == [True]
    assert signatures(headers) == 1

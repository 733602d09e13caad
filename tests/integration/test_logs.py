"""JSON log lines carry correlation fields and never a secret or a token."""

import io
import json
import logging

import pytest

from db import configs, tokens
from db.scope import PLATFORM
from service.runtime.logs import configure, scrub
from tests.helpers import wait_until
from tests.receivers import Reply


@pytest.fixture
def captured():
    stream = io.StringIO()
    configure("debug", stream=stream)
    yield stream
    configure("warning")


def _lines(stream):
    return [json.loads(line) for line in stream.getvalue().splitlines() if line]


def test_attempt_lines_carry_correlation_fields_and_no_secrets(
        make, receiver_factory, start_worker, captured):
    def echo(request):  # an endpoint that echoes our headers back into its body
        code = 500 if request.path.endswith("fail") else 200
        return Reply(code, body=json.dumps(request.headers).encode())

    receiver = receiver_factory(echo)
    ok = make.config(endpoint=receiver.url, event_types=["a"])
    bad = make.config(endpoint=receiver.url + "fail", event_types=["a"],
                      secret="whsec_" + "QUJD" * 8)
    _, new_secret = configs.rotate_secret(make.pool, PLATFORM, ok.id, grace_seconds=3600)
    _, token = tokens.create(make.pool, name="ops", tenant_id=None, role="operator")
    tokens.authenticate(make.pool, token)
    _, delivery_ids = make.event(type="a", id="evt-log")
    by_config = {make.row(i)["config_id"]: i for i in delivery_ids}
    first, second = by_config[ok.id], by_config[bad.id]
    start_worker(min_backoff=0.05, max_backoff=0.05, max_attempts=2)
    wait_until(lambda: make.row(second)["status"] == "failed")
    wait_until(lambda: make.row(first)["status"] == "succeeded")

    def attempt_lines():
        return [line for line in _lines(captured) if line["message"] == "attempt"]

    # An attempt's line is written once its result is recorded, so the last one may still be
    # on its way when the rows say every delivery is done.
    attempts = wait_until(lambda: len(found := attempt_lines()) >= 3 and found)
    assert len(attempts) == 3
    text = captured.getvalue()
    secrets = [make.secrets[ok.id], make.secrets[bad.id], new_secret, token]
    for secret in secrets:
        assert secret not in text
        assert secret.split("_", 1)[1] not in text
    for line in attempts:
        assert {"time", "level", "delivery_id", "event_id", "config_id", "attempt",
                "status_code", "next_attempt_at", "outcome", "duration_ms"} <= set(line)
        assert line["event_id"] == "evt-log"
    retry = next(line for line in attempts
                 if line["delivery_id"] == second and line["attempt"] == 1)
    assert retry["status"] == "pending" and retry["next_attempt_at"]
    assert retry["status_code"] == 500


def test_scrub_hides_anything_shaped_like_a_secret_or_token():
    line = "secret whsec_QUJDREVGR0g= and token whk_abc-DEF_123 and whsec_x"
    assert "QUJD" not in scrub(line) and "abc-DEF" not in scrub(line)
    assert scrub(line).count("[redacted]") == 3


def test_a_logged_secret_is_redacted_even_by_mistake(captured):
    logging.getLogger("webhooks.test").warning("oops %s", "whsec_QUJDREVGR0g=",
                                               extra={"token": "whk_secretvalue"})
    text = captured.getvalue()
    assert "QUJDREVGR0g" not in text and "secretvalue" not in text
    (line,) = _lines(captured)
    assert line["level"] == "warning" and line["logger"] == "webhooks.test"

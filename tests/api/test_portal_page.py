"""The portal's files: served under the strict policy with the configured frame ancestors,
no inline script or style anywhere, shipped with the package; its Python verification snippet
accepts a request signed by the service and refuses a forged one."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from db.vocabulary import SECRET_PREFIX
from service.policy.signing import headers as signed_headers
from service.runtime.settings import Settings, SettingsError
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from service.web.portal import PORTAL_DIR

FILES = sorted(path for path in PORTAL_DIR.rglob("*") if path.is_file())
SECRET = SECRET_PREFIX + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_page_and_its_assets_carry_the_policy_with_the_frame_ancestors_set(pool):
    settings = Settings.load({"WEBHOOKS_PORTAL_FRAME_ANCESTORS":
                              "'self' https://app.example.com"}, {"database_url": pool.dsn})
    client = create_app(settings, pool=pool, telemetry=Telemetry(role="web")).test_client()
    for address in ["/portal", *(f"/portal/{p.relative_to(PORTAL_DIR)}" for p in FILES)]:
        response = client.get(address)
        assert response.status_code == 200, address
        policy = response.headers["Content-Security-Policy"]
        assert policy.endswith("frame-ancestors 'self' https://app.example.com"), address
        assert "default-src 'none'" in policy and "unsafe" not in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "Set-Cookie" not in response.headers


def test_the_default_frame_ancestors_are_the_service_itself(client):
    policy = client.get("/portal").headers["Content-Security-Policy"]
    assert policy.endswith("frame-ancestors 'self'")


@pytest.mark.parametrize("value", ["'self'; script-src *", "https://a.example, https://b",
                                   "'none' https://a.example", ""])
def test_frame_ancestors_that_would_change_the_policy_are_refused(value):
    with pytest.raises(SettingsError, match="WEBHOOKS_PORTAL_FRAME_ANCESTORS"):
        Settings.load({"WEBHOOKS_PORTAL_FRAME_ANCESTORS": value})


def test_no_file_holds_inline_script_or_style():
    for path in FILES:
        text = path.read_text()
        if path.suffix == ".html":
            assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), path
            assert not re.search(r"\sstyle=|<style", text), path
            assert not re.search(r"\son[a-z]+=", text), path
        if path.suffix == ".js":
            assert "innerHTML" not in text and "setAttribute(\"style\"" not in text, path
            assert not re.search(r"\bstyle:\s", text), path


def test_setup_ships_every_file_of_the_portal():
    shipped = Path(__file__).resolve().parents[2].joinpath("setup.cfg").read_text()
    for suffix in {path.relative_to(PORTAL_DIR).as_posix().replace(path.stem, "*")
                   for path in FILES}:
        assert f"portal/{suffix}" in shipped, suffix


def test_the_python_snippet_verifies_a_signed_request_and_refuses_a_forged_one():
    source = (PORTAL_DIR / "snippets" / "python.txt").read_text()
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source.replace("whsec_YOUR_ENDPOINT_SECRET", SECRET), "python.txt", "exec"),
         namespace)
    receiver = namespace["app"].test_client()
    body = b'{"id":"evt_1","type":"order.created","timestamp":"2026-01-01T00:00:00.000Z",' \
           b'"data":{"order":1}}'
    sent = signed_headers([SECRET], "msg_1", int(time.time()), body)
    assert receiver.post("/webhooks", data=body, headers=sent).status_code == 204
    forged = signed_headers([SECRET_PREFIX + "b3RoZXItc2VjcmV0LW9mLTI0LWJ5dGVzIQ=="], "msg_1",
                            int(time.time()), body)
    assert receiver.post("/webhooks", data=body, headers=forged).status_code == 400
    stale = signed_headers([SECRET], "msg_2", int(time.time()) - 3600, body)
    assert receiver.post("/webhooks", data=body, headers=stale).status_code == 400

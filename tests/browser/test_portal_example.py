"""examples/portal_host.py as a platform runs it: against a real `webhooks web`, its page in
Chromium shows the tenant's portal, and a new session is minted when the portal says its own
ended."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests

from db import tenants
from service.local.ports import reserve_port
from tests.browser.conftest import ROOT, open_page
from tests.helpers import wait_for_http, wait_until

EXAMPLE = ROOT / "examples" / "portal_host.py"


@pytest.fixture(scope="module")
def example_port() -> int:
    return reserve_port()


@pytest.fixture(scope="module")
def service_environment(example_port) -> dict[str, str]:
    return {"WEBHOOKS_PORTAL_FRAME_ANCESTORS": f"http://127.0.0.1:{example_port}"}


@pytest.fixture(scope="module")
def example(service_url, operator_token, example_port, seed) -> Iterator[str]:
    tenant = tenants.create(seed.pool, uid="cus_example", name="Example")
    seed.config(endpoint="https://example.com/hooks", name="Example hooks",
                event_types=["order.created"], tenant_id=tenant.id)
    env = {**os.environ, "WEBHOOKS_URL": service_url, "WEBHOOKS_TOKEN": operator_token,
           "TENANT": "cus_example", "PORT": str(example_port)}
    process = subprocess.Popen([sys.executable, str(EXAMPLE)], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{example_port}/"
    try:
        wait_for_http(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_example_page_embeds_the_portal_and_mints_a_new_session_when_it_ends(
        browser, example, service_url, operator_token, seed):
    page, console = open_page(browser)
    page.goto(example)
    frame = page.frame_locator("#portal")
    frame.locator("main tbody button.link:has-text('Example hooks')").wait_for()
    minted = seed.count("SELECT count(*) FROM portal_sessions")

    requests.post(f"{service_url}/graphql", timeout=30,
                  headers={"Authorization": f"Bearer {operator_token}"},
                  json={"query": 'mutation { revokePortalSessions(tenant: "cus_example") }'})
    frame.locator("main tbody button.link").click()  # refused: the page mints a new session
    wait_until(lambda: seed.count("SELECT count(*) FROM portal_sessions") == minted + 1)
    frame.locator("main tbody button.link:has-text('Example hooks')").wait_for()
    assert seed.count("SELECT count(*) FROM portal_sessions WHERE revoked_at IS NULL") == 1
    # The one refused call, which ended the session, is the console's only error.
    assert [error for error in console.errors if "status of 401" not in error] == []

"""Signing in to the dashboard: a viewer sees everything and can change nothing, and a token
that is refused, revoked or expired signs the browser out with a message."""

from __future__ import annotations

import re

from db import tokens
from tests.browser.conftest import UNCLAIMED, open_page, shoot, sign_in

ALLOWED_401 = re.compile(r"status of 401")


def test_a_viewer_sees_everything_and_can_change_nothing(browser, service_url, seed,
                                                         viewer_token, receiver):
    config = seed.config(endpoint="http://127.0.0.1:9/v", event_types=["viewer.seen"],
                         name="watched")
    delivery = seed.delivery(config, status="failed", next_attempt_at=None, **UNCLAIMED)
    page, console = open_page(browser)
    sign_in(page, service_url, viewer_token)
    assert page.locator("#who").inner_text() == "viewer (read-only)"
    page.goto(f"{service_url}/#/deliveries/{delivery}")
    page.wait_for_selector("h2:has-text('Payload')")
    assert page.locator("button:has-text('Replay')").count() == 0
    page.goto(f"{service_url}/#/deliveries")
    page.wait_for_selector("#total")
    assert page.locator("text=Bulk replay").count() == 0
    page.goto(f"{service_url}/#/configs/{config.id}")
    page.wait_for_selector("text=All deliveries of this config")
    assert page.locator("text=Deactivate").count() == 0
    assert page.locator("text=Rotate secret").count() == 0
    assert page.locator("#config-endpoint").count() == 0
    shoot(page, "viewer-config")

    refused = page.evaluate("""async ([id, token]) => {
        const response = await fetch("/graphql", {method: "POST", headers: {
            "Content-Type": "application/json", Authorization: `Bearer ${token}`,
            "Idempotency-Key": "viewer-try"},
          body: JSON.stringify({query: `mutation { replayDelivery(id: "${id}") { action } }`})});
        return (await response.json()).errors[0].extensions.code;
    }""", [str(delivery), viewer_token])
    assert refused == "FORBIDDEN"
    assert seed.row(delivery)["status"] == "failed"
    assert console.errors == []


def test_a_revoked_token_signs_the_browser_out_with_a_message(browser, service_url,
                                                              service_pool):
    _, token = tokens.create(service_pool, name="short-lived", tenant_id=None, role="operator")
    page, console = open_page(browser)
    page.goto(f"{service_url}/")
    page.fill("#token", "whk_not-a-real-token")
    page.click("button[type=submit]")
    page.wait_for_selector("text=That token is not accepted: it is unknown, expired or revoked.")
    shoot(page, "sign-in-refused")

    sign_in(page, service_url, token)
    tokens.revoke(service_pool, "short-lived")
    page.click("#nav >> text=Deliveries")
    page.wait_for_selector("text=Your token is no longer accepted")
    assert page.locator("#token").is_visible()
    assert page.evaluate("sessionStorage.getItem('webhooks.token')") is None
    assert [e for e in console.errors if not ALLOWED_401.search(e)] == []


def test_an_expired_token_signs_the_browser_out_with_a_message(browser, service_url,
                                                               service_pool):
    _, token = tokens.create(service_pool, name="expiring", tenant_id=None, role="operator",
                             expires_in=3600)
    page, console = open_page(browser)
    sign_in(page, service_url, token)
    with service_pool.transaction() as cursor:  # the hour goes by
        cursor.execute("UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                       "WHERE name = 'expiring'")
    page.click("#nav >> text=Configs")
    page.wait_for_selector("text=Your token is no longer accepted")
    assert page.locator("#token").is_visible()
    assert page.evaluate("sessionStorage.getItem('webhooks.token')") is None
    assert [e for e in console.errors if not ALLOWED_401.search(e)] == []


def test_the_reason_of_a_sign_out_stays_when_the_page_moves_on(browser, service_url,
                                                                service_pool):
    """A request refused for an expired token signs the tab out; a navigation that follows
    at once (a click, a refresh already on its way) shows the same reason, not a bare form."""
    _, token = tokens.create(service_pool, name="expiring-2", tenant_id=None, role="operator",
                             expires_in=3600)
    page, console = open_page(browser)
    sign_in(page, service_url, token)
    with service_pool.transaction() as cursor:
        cursor.execute("UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                       "WHERE name = 'expiring-2'")
    page.click("#nav >> text=Configs")
    page.wait_for_selector("text=Your token is no longer accepted")
    page.evaluate("location.hash = '#/deliveries'")  # moves on while signed out
    page.wait_for_selector("#token")
    assert "Your token is no longer accepted" in page.inner_text("main")
    assert [e for e in console.errors if not ALLOWED_401.search(e)] == []

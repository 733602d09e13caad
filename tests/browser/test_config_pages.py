"""Configs in the dashboard: created with the secret shown once, deactivated with a count,
paused and resumed, edited, rotated, reset and deleted from the keyboard; an ordered config's
held key replayed from its page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import requests

from db import configs, events
from db.scope import DEFAULT_TENANT_ID, PLATFORM
from tests.browser.conftest import UNCLAIMED, open_page, shoot, sign_in
from tests.helpers import wait_until
from tests.receivers import Receiver, Reply


def test_configs_are_created_with_the_secret_shown_once_and_deactivated_with_a_count(
        browser, service_url, seed, operator_token):
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/configs/new")
    page.fill("#config-name", "billing")
    page.fill("#config-endpoint", "http://127.0.0.1:9/billing")
    page.fill("#config-types", "invoice.paid, invoice.voided")
    page.click("text=Create config")
    secret = page.locator(".secret-value")
    assert secret.inner_text().startswith("whsec_")
    config_id = page.url.rsplit("/", 1)[1]
    assert configs.get(seed.pool, PLATFORM, config_id).event_types == ["invoice.paid",
                                                                       "invoice.voided"]
    shoot(page, "config-created")

    for _ in range(2):
        (delivery,) = seed.event(type="invoice.paid")[1]
        # Due in an hour, so the running worker leaves them pending (an attempt it may have
        # started meanwhile is fenced off by its claim token and changes nothing).
        seed.set(delivery, status="pending", next_attempt_at=datetime.now(UTC) + timedelta(hours=1),
                 **UNCLAIMED)
    page.reload()
    page.wait_for_selector("text=Deactivate")
    page.click("button:has-text('Deactivate')")
    dialog = page.locator("dialog")
    assert "cancels its 2 pending deliveries" in dialog.inner_text()
    dialog.locator("button:has-text('Deactivate')").click()
    page.wait_for_selector("text=Deactivated; 2 pending deliveries cancelled.")
    assert configs.get(seed.pool, PLATFORM, config_id).active is False
    assert page.locator(".secret-value").count() == 0  # shown once, not after a reload
    assert console.errors == []


def test_an_operator_pauses_and_resumes_a_config(browser, service_url, seed, operator_token):
    config = seed.config(endpoint="http://127.0.0.1:9/p", event_types=["pause.me"],
                         name="pausable")
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/configs/{config.id}")
    page.click("button:has-text('Pause')")
    dialog = page.locator("dialog")
    assert "nothing is cancelled" in dialog.inner_text()
    dialog.locator("#reason").fill("receiver migrating")
    dialog.locator("button:has-text('Pause')").click()
    page.wait_for_selector("main .title .badge.paused")
    timeline = page.locator("section:has(h2:has-text('Health timeline')) tbody")
    assert "receiver migrating" in timeline.inner_text()
    assert "browser-operator" in timeline.inner_text()
    answer = requests.post(f"{service_url}/graphql", timeout=30, headers={
        "Authorization": f"Bearer {operator_token}"}, json={
        "query": "query ($id: ID!) { config(id: $id) { health { state } } }",
        "variables": {"id": config.id}}).json()
    assert answer["data"]["config"]["health"]["state"] == "PAUSED"
    (delivery,) = seed.event(type="pause.me")[1]
    page.goto(f"{service_url}/#/configs?health=PAUSED")
    page.wait_for_selector("table >> text=pausable")
    shoot(page, "configs-paused")
    page.goto(f"{service_url}/#/configs/{config.id}")
    page.click("button:has-text('Resume')")
    # no longer paused: healthy, or failing once the worker tried the unreachable endpoint
    page.wait_for_selector("main .title .badge:is(.healthy, .failing)")
    assert seed.row(delivery)["status"] in ("pending", "delivering")  # paused: never cancelled
    assert console.errors == []


def test_an_operator_edits_rotates_resets_and_deletes_a_config_from_the_keyboard(
        browser, service_url, seed, operator_token):
    config = seed.config(endpoint="http://127.0.0.1:9/old", event_types=["edit.me"],
                         name="editable")
    first_secret = seed.secrets[config.id]
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/configs/{config.id}")

    page.fill("#config-name", "edited")
    page.fill("#config-endpoint", "http://127.0.0.1:9/new")
    page.fill("#config-types", "edit.me, edit.again")
    page.click("text=Save changes")
    page.wait_for_selector("main h1:has-text('edited')")
    changed = configs.get(seed.pool, PLATFORM, config.id)
    assert (changed.name, changed.endpoint, changed.event_types) == (
        "edited", "http://127.0.0.1:9/new", ["edit.me", "edit.again"])

    page.click("button:has-text('Rotate secret')")
    page.keyboard.press("Tab")  # from Cancel to the confirmation, then Enter
    page.keyboard.press("Enter")
    secret = page.locator(".secret-value")
    secret.wait_for()
    assert secret.inner_text().startswith("whsec_") and secret.inner_text() != first_secret
    assert len(configs.get(seed.pool, PLATFORM, config.id).previous_secrets_expire_at) == 1

    with seed.pool.transaction() as cursor:  # the endpoint failed enough to open the circuit
        cursor.execute("UPDATE config_health SET circuit = 'open', opened_at = now(), "
                       "next_probe_at = now() + interval '1 hour', probe_interval_seconds = 60 "
                       "WHERE config_id = %s", (config.id,))
    page.reload()
    page.click("button:has-text('Reset circuit')")
    dialog = page.locator("dialog")
    assert "sent again at once" in dialog.inner_text()
    dialog.locator("button:has-text('Reset circuit')").click()
    page.wait_for_selector("main .title .badge.healthy")

    page.click("button:has-text('Delete')")
    assert "its deliveries stay inspectable" in page.locator("dialog").inner_text()
    page.keyboard.press("Escape")  # a confirmation is cancelled from the keyboard too
    assert configs.get(seed.pool, PLATFORM, config.id) is not None
    page.click("button:has-text('Delete')")
    page.locator("dialog >> button:has-text('Delete')").click()
    page.wait_for_selector("text=Deleted; 0 pending deliveries cancelled.")
    assert configs.get(seed.pool, PLATFORM, config.id) is None
    assert console.errors == []


def test_an_ordered_configs_held_key_is_shown_and_replayed_from_its_page(
        browser, service_url, seed, operator_token):
    answers = {"ok": False}
    receiver = Receiver(lambda request: Reply(200) if answers["ok"] else Reply(400))
    try:
        config = seed.config(endpoint=receiver.url, event_types=["ledger.posted"],
                             name="ledger", ordering="per_key")
        first = _keyed_event(seed, "ledger.posted", 1, "acct-7")
        second = _keyed_event(seed, "ledger.posted", 2, "acct-7")
        wait_until(lambda: seed.row(first)["status"] == "failed", timeout=60)
        page, console = open_page(browser)
        sign_in(page, service_url, operator_token)
        page.goto(f"{service_url}/#/configs/{config.id}")
        held = page.locator("section[aria-label='Held keys']")
        held.locator("text=acct-7").wait_for()
        assert "Held keys (1)" in held.inner_text()
        row = held.locator("tbody tr")
        assert row.locator("td").nth(4).inner_text() == "1"  # the second waits behind it
        assert "per key, a failure holds its key" in page.locator(".facts").inner_text()
        shoot(page, "config-held-keys")
        answers["ok"] = True
        row.locator("button:has-text('Replay')").click()
        wait_until(lambda: seed.row(second)["status"] == "succeeded", timeout=60)
        assert seed.row(first)["status"] == "succeeded"
        page.reload()
        page.wait_for_selector("text=No key is held")
        assert console.errors == []
    finally:
        receiver.stop()


def _keyed_event(seed, type: str, n: int, key: str) -> int:
    event = events.new_event(f"{type}-{n}", type, {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1000, ordering_key=key)
    (delivery_id,) = events.publish(seed.pool, event).delivery_ids
    return int(delivery_id)

"""Configs in the dashboard: created with the secret shown once, deactivated with a count,
paused and resumed, edited, rotated, reset and deleted from the keyboard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import requests

from db import configs
from tests.browser.conftest import UNCLAIMED, open_page, shoot, sign_in


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
    assert configs.get(seed.pool, config_id).event_types == ["invoice.paid", "invoice.voided"]
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
    assert configs.get(seed.pool, config_id).active is False
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
    dialog.locator("button:has-text('Pause')").click()
    page.wait_for_selector("main .title .badge.paused")
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
    page.wait_for_selector("main .title .badge.healthy")
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
    changed = configs.get(seed.pool, config.id)
    assert (changed.name, changed.endpoint, changed.event_types) == (
        "edited", "http://127.0.0.1:9/new", ["edit.me", "edit.again"])

    page.click("button:has-text('Rotate secret')")
    page.keyboard.press("Tab")  # from Cancel to the confirmation, then Enter
    page.keyboard.press("Enter")
    secret = page.locator(".secret-value")
    secret.wait_for()
    assert secret.inner_text().startswith("whsec_") and secret.inner_text() != first_secret
    assert len(configs.get(seed.pool, config.id).previous_secrets_expire_at) == 1

    with seed.pool.transaction() as cursor:  # the endpoint failed enough to open the circuit
        cursor.execute("UPDATE config_health SET circuit = 'open', opened_at = now(), "
                       "next_probe_at = now() + interval '1 hour', probe_interval_seconds = 60 "
                       "WHERE config_id = %s", (config.id,))
    page.reload()
    page.click("button:has-text('Reset circuit')")
    page.wait_for_selector("main .title .badge.healthy")

    page.click("button:has-text('Delete')")
    assert "its deliveries stay inspectable" in page.locator("dialog").inner_text()
    page.keyboard.press("Escape")  # a confirmation is cancelled from the keyboard too
    assert configs.get(seed.pool, config.id) is not None
    page.click("button:has-text('Delete')")
    page.locator("dialog >> button:has-text('Delete')").click()
    page.wait_for_selector("text=Deleted; 0 pending deliveries cancelled.")
    assert configs.get(seed.pool, config.id) is None
    assert console.errors == []

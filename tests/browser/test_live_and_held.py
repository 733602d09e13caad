"""The dashboard stays true while an incident moves: pages read again on their own (saying
when, pausable), a held delivery says what holds it and offers no Expedite, the config page
shows its window of attempts, recent failures and health timeline, and times name their zone."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from db import health
from db.scope import PLATFORM
from tests.browser.conftest import UNCLAIMED, WAIT_MS, open_page, shoot, sign_in


def graphql_requests(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if r.url.endswith("/graphql") else None)
    return seen


def test_a_page_refreshes_on_its_own_until_paused_and_a_held_delivery_says_why(
        browser, service_url, seed, operator_token):
    config = seed.config(endpoint="http://127.0.0.1:9/live", event_types=["live.one"],
                         name="live-one")
    (delivery,) = seed.event(type="live.one")[1]
    seed.set(delivery, status="pending", next_attempt_at=datetime.now(UTC) + timedelta(hours=1),
             **UNCLAIMED)
    health.pause(seed.pool, PLATFORM, config.id, reason="receiver migrating")
    page, console = open_page(browser)
    page.clock.install()
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/deliveries/{delivery}")
    held = page.wait_for_selector("#held")
    assert "Held: its config is paused (receiver migrating)" in held.inner_text()
    assert page.locator("button:has-text('Expedite')").count() == 0
    assert page.inner_text("#live-age").startswith("updated")
    shoot(page, "delivery-held")

    seen = graphql_requests(page)
    health.resume(seed.pool, PLATFORM, config.id, reason="migrated")
    page.clock.fast_forward(11_000)  # one refresh period and a second
    page.wait_for_selector("#held", state="detached")
    page.wait_for_selector("button:has-text('Expedite')")
    assert seen, "the refresh read the delivery again"

    page.click("#live-toggle")
    assert page.inner_text("#live-toggle") == "Start auto-refresh"
    assert page.inner_text("#live-age").endswith("· paused")
    paused_at = len(seen)
    health.pause(seed.pool, PLATFORM, config.id, reason="again")
    page.clock.fast_forward(60_000)  # six periods: nothing is read while paused
    assert len(seen) == paused_at
    assert page.locator("#held").count() == 0
    page.click("#live-toggle")
    page.clock.fast_forward(11_000)
    page.wait_for_selector("#held")
    assert len(seen) > paused_at
    assert console.errors == []


def test_the_config_page_shows_its_window_failures_and_timeline_in_a_named_zone(
        browser, service_url, seed, operator_token):
    config = seed.config(endpoint="http://127.0.0.1:9/timeline", event_types=["tl.one"],
                         name="timeline-one")
    (delivery,) = seed.event(type="tl.one")[1]
    seed.set(delivery, status="failed", next_attempt_at=None, last_status_code=500,
             last_error="HTTP 500: upstream down", **UNCLAIMED)
    health.pause(seed.pool, PLATFORM, config.id, reason="on call: receiver down", actor="alice")
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/configs/{config.id}?window=15m")
    page.wait_for_selector("h2:has-text('Attempts, last 15 min')")
    assert page.locator(".windows a[aria-current='true']").inner_text() == "15 min"
    failures = page.locator("section:has(h2:has-text('Recent failures')) tbody").inner_text()
    assert str(delivery) in failures and "HTTP 500" in failures and "upstream down" in failures
    timeline = page.locator("section:has(h2:has-text('Health timeline')) tbody").inner_text()
    assert "paused" in timeline and "alice" in timeline and "on call: receiver down" in timeline
    shoot(page, "config-timeline")
    created = page.locator("dt:has-text('Created') + dd time").inner_text()
    assert re.search(r"\b(UTC|GMT)\b", created), created  # the zone, named
    page.goto(f"{service_url}/#/deliveries?code=5xx&config={config.id}")
    page.wait_for_selector(f"a[href='#/deliveries/{delivery}']")
    page.goto(f"{service_url}/#/deliveries?code=five")
    assert '"five" is not a status code' in page.wait_for_selector("p.error").inner_text()
    assert console.errors == []


def test_an_endpoint_holding_its_requests_open_needs_a_look_before_its_first_timeout(
        browser, service_url, seed, operator_token):
    """Nothing failed yet and nothing is recorded: an attempt claimed 40 s ago is still
    under way. The overview lists the config all the same, saying how long it has waited."""
    config = seed.config(endpoint="http://127.0.0.1:9/hanging", event_types=["hang.one"],
                         name="hanging-one")
    (delivery,) = seed.event(type="hang.one")[1]
    seed.set(delivery, status="delivering", claim_token=str(uuid.uuid4()), claimed_by="elsewhere",
             claimed_at=datetime.now(UTC) - timedelta(seconds=40))
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/")
    row = page.locator("section[aria-label='Configs that need a person'] tr",
                       has_text="hanging-one")
    row.wait_for()
    assert re.search(r"1 without an answer yet, the oldest claimed \d+ s ago",
                     row.inner_text()), row.inner_text()
    assert row.locator("a").get_attribute("href") == f"#/configs/{config.id}"
    shoot(page, "overview-unanswered")
    assert console.errors == []


def _stage_health(seed, config, *, in_a_row: int, failed_minutes_ago: int) -> None:
    """A health row with its last failure, and 4 of the last 10 attempts succeeded."""
    with seed.pool.transaction() as cursor:
        cursor.execute(
            "UPDATE config_health SET consecutive_failures = %s, last_failure = 'HTTP 500', "
            "last_failure_at = now() - make_interval(mins => %s) WHERE config_id = %s",
            (in_a_row, failed_minutes_ago, config.id))
        cursor.execute(
            "INSERT INTO config_attempt_counts (config_id, period_start, attempts, succeeded) "
            "VALUES (%s, attempt_period(now()), 10, 4)", (config.id,))


def test_a_failing_endpoint_is_not_called_healthy_and_a_recovered_one_is_not_red(
        browser, service_url, seed, operator_token):
    failing = seed.config(endpoint="http://127.0.0.1:9/f", event_types=["rec.f"],
                          name="recovery-failing")
    recovered = seed.config(endpoint="http://127.0.0.1:9/r", event_types=["rec.r"],
                            name="recovery-recovered")
    _stage_health(seed, failing, in_a_row=5, failed_minutes_ago=1)
    _stage_health(seed, recovered, in_a_row=0, failed_minutes_ago=20)
    flapping = seed.config(endpoint="http://127.0.0.1:9/o", event_types=["rec.o"],
                           name="recovery-flapping")
    _stage_health(seed, flapping, in_a_row=0, failed_minutes_ago=1)  # on and off
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/configs?search=recovery-")
    rows = {name: page.locator("tbody tr", has_text=name)
            for name in ("recovery-failing", "recovery-recovered", "recovery-flapping")}
    for row in rows.values():
        row.wait_for()
    failing_row, recovered_row = rows["recovery-failing"], rows["recovery-recovered"]
    assert failing_row.locator(".badge").nth(1).inner_text() == "failing · 5 in a row"
    assert failing_row.locator("td.num .bad").inner_text() == "40.0 %"
    assert recovered_row.locator(".badge").nth(1).inner_text() == "healthy"
    assert recovered_row.locator(".bad").count() == 0
    assert re.search(r"recovered · before: HTTP 500 · 20 min ago",
                     recovered_row.inner_text()), recovered_row.inner_text()
    assert "40.0 % · recovered" in recovered_row.inner_text()
    flapping_row = rows["recovery-flapping"]  # its last attempt succeeded, a minute after a
    assert "recovered" not in flapping_row.inner_text()  # failure: not called recovered yet
    assert "HTTP 500 · 1 min ago" in flapping_row.inner_text()
    shoot(page, "configs-failing-and-recovered")

    page.goto(f"{service_url}/#/configs/{failing.id}")
    health_facts = page.wait_for_selector("dt:has-text('Health') + dd").inner_text()
    assert health_facts.startswith("failing: the circuit is closed"), health_facts
    assert "5 failures in a row" in health_facts
    page.goto(f"{service_url}/#/")
    listed = page.locator("section[aria-label='Configs that need a person'] tr",
                          has_text="recovery-failing")
    assert listed.locator(".badge").inner_text() == "failing · 5 in a row"
    recovered_listed = page.locator("section[aria-label='Configs that need a person'] tr",
                                    has_text="recovery-recovered")
    assert "recovered · before: HTTP 500" in recovered_listed.inner_text()
    assert console.errors == []


def test_the_refresh_says_its_age_and_can_be_stopped_after_a_reload_and_a_second_sign_in(
        browser, service_url, seed, operator_token):
    """The header's clock and its button belong to the page, not to one sign-in: a tab
    reloaded while signed in keeps them, and signing in again does not add a second button
    handler (which would undo every click)."""
    from playwright.sync_api import expect  # the browser tests skip without Playwright

    page, console = open_page(browser)
    page.clock.install()
    sign_in(page, service_url, operator_token)
    page.reload()
    page.wait_for_selector("#nav:not([hidden])")
    age = page.locator("#live-age")
    expect(age).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
    page.clock.fast_forward(5_000)
    expect(age).to_have_text(re.compile(r"^updated \d+ s ago$"), timeout=WAIT_MS)
    page.click("#live-toggle")
    assert page.inner_text("#live-toggle") == "Start auto-refresh"
    page.click("#live-toggle")
    page.click("#sign-out")
    sign_in(page, service_url, operator_token)
    # The page the sign-in leads to is drawn (its header says when it was read) before the
    # button is clicked: clicked while the header still moves, the click can miss it.
    expect(age).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
    page.click("#live-toggle")
    expect(page.locator("#live-toggle")).to_have_text("Start auto-refresh", timeout=WAIT_MS)
    assert page.inner_text("#live-age").endswith("· paused")
    assert console.errors == []

"""The rest of the dashboard: rejected broker messages with their reason and bytes, paging
through deliveries both ways, API errors in words, every page at desktop and phone width and
reachable from the keyboard, and GraphiQL without the internet."""

from __future__ import annotations

import pytest

from db import rejected
from tests.browser.conftest import UNCLAIMED, open_page, shoot, sign_in


def test_rejected_messages_show_their_reason_and_bytes_and_deliveries_page_both_ways(
        browser, service_url, seed, operator_token):
    with seed.pool.transaction() as cursor:
        rejected.store(cursor, [rejected.Rejection("orders", 2, 41, "invalid_json: Expecting "
                                                   "value", b"{not json\x00\xff")])
    config = seed.config(endpoint="http://127.0.0.1:9/paged", event_types=["paged.one"],
                         name="paged")
    ids = [seed.delivery(config, status="failed", next_attempt_at=None, **UNCLAIMED)
           for _ in range(55)]
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)

    page.goto(f"{service_url}/#/rejected")
    item = page.locator("main", has_text="orders")
    item.wait_for()
    assert "invalid_json: Expecting value" in item.inner_text()
    page.click("summary:has-text('11 bytes')")
    assert page.locator("pre.raw").first.inner_text() == "{not json··"
    assert "e25vdCBqc29uAP8=" in item.inner_text()  # the raw bytes, base64
    shoot(page, "rejected")

    # A row is known by its delivery's link: text=1 would also match 11 on the page before.
    def row(delivery_id):
        return f"tbody a[href='#/deliveries/{delivery_id}']"

    page.goto(f"{service_url}/#/deliveries?config={config.id}")
    page.wait_for_selector(row(ids[-1]))  # newest first
    first_page = page.locator("tbody tr").count()
    page.click("a[rel=next]")
    page.wait_for_selector(row(ids[0]))
    assert first_page + page.locator("tbody tr").count() == len(ids)
    page.click("a[rel=prev]")
    page.wait_for_selector(row(ids[-1]))
    assert page.locator("tbody tr").count() == first_page
    assert console.errors == []


def test_api_errors_are_shown_in_words(browser, service_url, operator_token):
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/#/deliveries/999999999")
    page.wait_for_selector("text=Not found: delivery 999999999 not found")
    page.goto(f"{service_url}/#/deliveries?code=abc")
    error = page.locator("p.error")
    error.wait_for()
    assert error.inner_text().startswith('"abc" is not a status code')  # said before asking
    page.goto(f"{service_url}/#/configs/no-such-config")
    page.wait_for_selector("text=Not found: config 'no-such-config' not found")
    page.goto(f"{service_url}/#/nowhere")
    page.wait_for_selector("text=There is no page at /nowhere.")
    assert console.errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_the_screen_and_is_keyboard_reachable(browser, service_url, seed,
                                                              operator_token, width):
    config = seed.config(endpoint="http://127.0.0.1:9/w", event_types=[f"fit.{width}"],
                         name=f"fit-{width}")
    delivery = seed.delivery(config)
    page, console = open_page(browser, width=width, height=844 if width < 500 else 900)
    sign_in(page, service_url, operator_token)
    pages = {"overview": "#/", "configs": "#/configs", "config": f"#/configs/{config.id}",
             "deliveries": "#/deliveries", "delivery": f"#/deliveries/{delivery}",
             "rejected": "#/rejected", "tenants": "#/tenants", "tenant": "#/tenants/default"}
    for name, route in pages.items():
        page.goto(f"{service_url}/{route}")
        page.wait_for_selector("main h1")
        page.wait_for_selector("main .loading", state="detached")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} is {overflow}px wider than a {width}px screen"
        if width < 500:
            shoot(page, f"phone-{name}")
    page.goto(f"{service_url}/#/")
    page.wait_for_selector("main h1")
    page.wait_for_selector("main .loading", state="detached")
    page.focus(".skip")
    reached = []
    for _ in range(6):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.textContent"))
    assert reached == ["webhooks", "Overview", "Configs", "Deliveries", "Tenants", "Rejected"]
    page.keyboard.press("Enter")
    page.wait_for_selector("main h1:has-text('Rejected broker messages')")
    assert console.errors == []


def test_graphiql_works_without_the_internet(browser, service_url, operator_token):
    page, console = open_page(browser)
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url)
            if not request.url.startswith((service_url, "data:")) else None)
    sign_in(page, service_url, operator_token)
    page.goto(f"{service_url}/graphql")
    page.wait_for_selector(".graphiql-container")
    page.evaluate("document.querySelector('.graphiql-query-editor .CodeMirror')"
                  ".CodeMirror.setValue('{ me { role } }')")
    page.click(".graphiql-execute-button")
    page.wait_for_selector(".graphiql-response >> text=OPERATOR")  # the session's token sent
    assert outside == []
    shoot(page, "graphiql")
    assert console.errors == []

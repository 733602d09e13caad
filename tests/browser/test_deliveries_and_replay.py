"""An operator's day in the dashboard (overview, configs, filters, one delivery, replay, bulk
replay with a dry run that survives a lost answer), and the deliveries page filtered by event
type and creation window and sorted by next attempt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from db import health
from db.scope import PLATFORM
from tests.browser.conftest import WAIT_MS, open_page, redrawn, shoot, sign_in
from tests.helpers import wait_until
from tests.receivers import Receiver, Reply


class Switch:
    """A receiver's answer that a test can change: 400 (fails at once) until `ok` is set."""

    def __init__(self) -> None:
        self.ok = False

    def __call__(self, request) -> Reply:
        return Reply(200) if self.ok else Reply(400, body=b"rejected by the test receiver")


@pytest.fixture
def switch_receiver():
    switch = Switch()
    receiver = Receiver(switch)
    yield switch, receiver
    receiver.stop()


def failed_deliveries(seed, receiver, *, name, event_type, count):
    """Make a config on `receiver` and `count` events for it; wait until the worker failed
    each delivery (the receiver answers 400); return the config and the delivery ids."""
    config = seed.config(endpoint=receiver.url, event_types=[event_type], name=name)
    ids = [seed.event(type=event_type)[1][0] for _ in range(count)]
    wait_until(lambda: all(seed.row(i)["status"] == "failed" for i in ids), timeout=WAIT_MS / 1000)
    return config, ids


def test_an_operator_signs_in_filters_opens_replays_and_bulk_replays(
        browser, service_url, seed, operator_token, switch_receiver):
    switch, receiver = switch_receiver
    config, ids = failed_deliveries(seed, receiver, name="shop", event_type="order.paid",
                                    count=3)
    seed.config(endpoint=receiver.url, event_types=["user.created"], name="crm")
    page, console = open_page(browser)

    sign_in(page, service_url, operator_token)
    page.wait_for_selector("text=Attempts, last 24 hours")
    failed_card = page.locator("a.stat", has_text="failed")
    assert int(failed_card.locator("strong").inner_text()) >= 3
    assert page.locator("svg.chart rect.bar.http_error").count() >= 1
    assert page.locator("#who").inner_text() == "operator"
    shoot(page, "overview")

    page.click("#nav >> text=Configs")
    page.wait_for_selector("table >> text=shop")
    shoot(page, "configs")
    page.click("table >> text=shop")
    page.wait_for_selector("dt:has-text('Success rate (24 h)')")
    assert "0.0 % of 3 attempts" in page.locator(".facts").inner_text()
    shoot(page, "config")

    page.click("#nav >> text=Deliveries")
    page.wait_for_selector("#total")
    page.fill("#filter-config", "sho")
    page.click("#filter-config-options li:has-text('shop')")
    assert page.locator(".chips .chip").get_attribute("title") == config.id
    page.check("input[name=status][value=FAILED]")
    redrawn(page, lambda: page.click("text=Apply filters"))
    assert page.locator("#total").inner_text() == "3 matching"
    assert "status=FAILED" in page.url
    rows = page.locator("table tbody tr")
    assert rows.count() == 3
    assert rows.first.locator("td").nth(3).inner_text() == "Default"  # its tenant
    assert rows.first.locator("td").nth(4).inner_text() == "shop"
    shoot(page, "deliveries")

    switch.ok = True
    page.click(f"table >> text='{ids[-1]}'")
    page.wait_for_selector("h2:has-text('Attempts (1)')")
    assert "HTTP 400" in page.locator(".timeline").inner_text()
    page.click(".timeline summary:has-text('Response excerpt')")
    assert "rejected by the test receiver" in page.locator(".timeline pre").inner_text()
    page.click("button:has-text('Replay')")
    page.wait_for_selector("h2:has-text('Attempts (2)')")
    newest = page.locator(".timeline li").first
    assert "HTTP 200" in newest.inner_text() and "success" in newest.inner_text()
    assert seed.row(ids[-1])["status"] == "succeeded"
    first, replayed = (r for r in receiver.requests
                       if r.headers["webhook-id"] == seed.row(ids[-1])["webhook_id"])
    sent = page.locator(".headers").inner_text()  # the replayed attempt's, as the receiver saw
    assert replayed.headers["webhook-signature"] in sent
    assert replayed.headers["webhook-timestamp"] in sent
    assert replayed.headers["traceparent"] in sent
    older = page.locator(".timeline li").nth(1)
    older.locator("summary:has-text('Headers sent')").click()
    assert first.headers["webhook-signature"] in older.locator(".attempt-headers").inner_text()
    shoot(page, "delivery")

    page.go_back()
    page.wait_for_selector("text=Replay matching deliveries…")
    page.click("text=Replay matching deliveries…")
    page.wait_for_selector("text=Dry run: 2 deliveries would be replayed or expedited.")
    assert page.locator(".dry-run table tbody tr").count() == 2
    assert {seed.row(i)["status"] for i in ids[:2]} == {"failed"}  # the dry run changed nothing
    shoot(page, "bulk-replay-dry-run")
    # The first page's answer is lost on its way back (the replay happened on the server):
    # Resume sends the page again with the same idempotency key and gets the same answer, so
    # nothing is replayed twice (a new key would find them pending and expedite them).
    keys: list[str] = []

    def lose_the_first_answer(route):
        body = route.request.post_data_json or {}
        if body.get("variables", {}).get("dryRun") is False:
            keys.append(route.request.headers.get("idempotency-key"))
            route.fetch()
            if len(keys) == 1:
                return route.abort("connectionreset")
        return route.continue_()

    page.route("**/graphql", lose_the_first_answer)
    page.click("button:has-text('Replay 2 deliveries')")
    page.click("dialog >> text=Replay them")
    page.wait_for_selector("text=Resume the replay")
    page.click("text=Resume the replay")
    page.wait_for_selector("text=2 replayed, 0 expedited, 0 skipped.")
    assert keys == [keys[0]] * 2 and keys[0]  # the one page sent twice, with one key
    page.unroute("**/graphql")
    wait_until(lambda: all(seed.row(i)["status"] == "succeeded" for i in ids),
               timeout=WAIT_MS / 1000)
    assert console.errors == ["Failed to load resource: net::ERR_CONNECTION_RESET"]  # ours


def shown_ids(page, expected: list[int]) -> None:
    """Wait until the deliveries table lists the ids `expected`, in that order."""
    page.wait_for_function("""(want) => JSON.stringify(
        [...document.querySelectorAll("main table tbody tr td:first-child")]
          .map((td) => td.textContent)) === JSON.stringify(want)""",
                           arg=[str(i) for i in expected])


def open_deliveries(page, url: str, query: str, event_types: str) -> None:
    """Open the deliveries page at `query`; return once its form shows `event_types` (so a
    form of the page before is never the one filled in)."""
    page.goto(f"{url}/#/deliveries{query}")
    page.wait_for_function("(types) => document.querySelector('#filter-type')?.value === types",
                           arg=event_types)


def local_input(page, moment: datetime) -> str:
    """Return `moment` as a datetime-local field holds it in the browser's time zone."""
    return page.evaluate("""(iso) => { const d = new Date(iso);
        return new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16); }""",
                         moment.isoformat())


def test_deliveries_are_filtered_by_event_type_and_creation_window_and_sorted_by_next_attempt(
        browser, service_url, seed, operator_token):
    config = seed.config(endpoint="http://127.0.0.1:9/sorted",
                         event_types=["sort.placed", "sort.shipped"], name="sorted")
    health.pause(seed.pool, PLATFORM, config.id, reason="the worker must leave these pending")
    now = datetime.now(UTC)
    placed = [seed.delivery(config) for _ in range(3)]  # oldest first
    shipped = [seed.event(type="sort.shipped")[1][0] for _ in range(2)]
    created = datetime(2024, 3, 1, 10, tzinfo=UTC)
    for n, delivery in enumerate(placed + shipped):  # an hour apart, placed[0] first
        seed.set(delivery, created_at=created + timedelta(hours=n))
    due_in = {placed[0]: 3, placed[1]: 1, placed[2]: 2, shipped[0]: 5, shipped[1]: 4}
    for delivery, hours in due_in.items():
        seed.set(delivery, next_attempt_at=now + timedelta(hours=hours))
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)
    open_deliveries(page, service_url, "", "")
    page.fill("#filter-type", "sort.shipped")
    page.click("text=Apply filters")
    shown_ids(page, shipped[::-1])  # newest first
    assert page.locator("#total").inner_text() == "2 matching"

    open_deliveries(page, service_url, "", "")
    page.fill("#filter-after", local_input(page, created + timedelta(hours=1)))
    page.fill("#filter-before", local_input(page, created + timedelta(hours=3)))
    page.click("text=Apply filters")
    shown_ids(page, [placed[2], placed[1]])  # from 11:00 (included) to 13:00 (excluded)
    assert page.locator("#total").inner_text() == "2 matching"
    assert "after_time=2024-03-01T11%3A00%3A00.000Z" in page.url  # shareable as it is
    page.reload()
    shown_ids(page, [placed[2], placed[1]])

    open_deliveries(page, service_url, "?type=sort.placed,sort.shipped",
                    "sort.placed,sort.shipped")
    page.select_option("#filter-order", "NEXT_ATTEMPT_AT")
    page.click("text=Apply filters")
    soonest = sorted(due_in, key=due_in.get)
    shown_ids(page, soonest)
    assert page.locator("main table thead th").last.inner_text() == "Next attempt"
    assert page.locator("main table tbody tr").first.locator("td").last.inner_text().startswith(
        "in ")
    page.select_option("#filter-order", "CREATED_AT_DESC")
    page.click("text=Apply filters")
    shown_ids(page, (placed + shipped)[::-1])
    assert console.errors == []

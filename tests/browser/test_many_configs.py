"""The dashboard beside a hundred thousand configs: configs are found by typing a piece of a
name (never from a list of every id), show by name with the id on hover, page both ways, and
the overview leads with the config that needs a person."""

from __future__ import annotations

import pytest

from tests.browser.conftest import WAIT_MS, open_page, shoot, sign_in
from tests.helpers import wait_until
from tests.receivers import Receiver, Reply

MANY = 100_000


@pytest.fixture(scope="module")
def many_configs(service_pool) -> int:
    """A platform's tenants: MANY configs, none subscribed to what the tests publish."""
    with service_pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types) "
            "SELECT 1, 'tenant-' || g, 'tenant ' || g, 'https://t' || g || '.example.com/hooks', "
            "'whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY', ARRAY['tenant.only'] "
            "FROM generate_series(1, %s) g", (MANY,))
    with service_pool.connection() as connection:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE configs")
            cursor.execute("VACUUM ANALYZE config_health")
        connection.autocommit = False
    return MANY


@pytest.fixture
def failing_receiver():
    receiver = Receiver(lambda request: Reply(500, body=b"ledger is down"))
    yield receiver
    receiver.stop()


def test_beside_100000_configs_an_operator_finds_the_failing_one_by_typing(
        browser, service_url, seed, operator_token, many_configs, failing_receiver):
    ledger = seed.config(endpoint=failing_receiver.url, event_types=["ledger.posted"],
                         name="acme-ledger")
    (_, (delivery_id,)) = seed.event(type="ledger.posted")
    wait_until(lambda: seed.row(delivery_id)["attempt_count"] >= 2, timeout=WAIT_MS / 1000)
    page, console = open_page(browser)
    sign_in(page, service_url, operator_token)

    # The overview leads with what needs a person, not a table of every config.
    needs = page.locator("section[aria-label='Configs that need a person'] table")
    needs.locator("text=acme-ledger").wait_for()
    assert needs.locator(f"a[title='{ledger.id}']").inner_text() == "acme-ledger"
    assert "HTTP 500" in needs.inner_text()
    shoot(page, "overview-many-configs")

    # The configs list: a page of them, the count of all, paging both ways.
    page.click("#nav >> text=Configs")
    page.wait_for_selector("#total")
    assert page.locator("#total").inner_text().replace(",", "").startswith("about 100")
    rows = page.locator("table tbody tr")
    assert rows.count() == 50
    first_page = rows.first.locator("td:first-child a").inner_text()
    page.click("a[rel=next]")
    page.wait_for_selector("a[rel=prev]")
    assert rows.first.locator("td:first-child a").inner_text() != first_page
    page.click("a[rel=prev]")
    page.wait_for_selector(f"table tbody tr >> nth=0 >> text='{first_page}'")

    # Type-ahead: the list follows the typing; the name shows, the id on hover.
    page.fill("#config-search", "acme")
    page.wait_for_selector("#total:text-is('1 matching')")
    link = page.locator("table tbody tr td:first-child a")
    assert link.inner_text() == "acme-ledger" and link.get_attribute("title") == ledger.id
    page.fill("#config-search", "tenant 99999")
    page.wait_for_selector("table tbody tr >> text='tenant 99999'")
    shoot(page, "configs-search")

    # The deliveries' config filter: picked by typing, shown by name, never a list of all.
    page.click("#nav >> text=Deliveries")
    page.wait_for_selector("#total")
    assert page.locator("#filter-config option").count() == 0
    page.fill("#filter-config", "acme-led")
    page.click("#filter-config-options li:has-text('acme-ledger')")
    chip = page.locator(".chips .chip")
    assert chip.get_attribute("title") == ledger.id and "acme-ledger" in chip.inner_text()
    page.click("text=Apply filters")
    page.wait_for_selector("#total:text-is('1 matching')")
    assert page.locator(".chips .chip").inner_text().startswith("acme-ledger")  # kept by name
    shoot(page, "deliveries-config-picker")
    assert console.errors == []

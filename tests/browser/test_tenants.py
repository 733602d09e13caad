"""Tenants in the dashboard: a platform operator narrows the pages to one tenant with the
picker (kept in the address), lists the tenants with their counts and opens one; a tenant
token sees its own tenant only, without the platform's pages, and nothing refused."""

from __future__ import annotations

from dataclasses import dataclass

from db import health, tenants, tokens
from db.configs import Config
from db.scope import PLATFORM
from tests.browser.conftest import UNCLAIMED, open_page, redrawn, shoot, sign_in

REFUSED = ("FORBIDDEN", "Not allowed", "Not found")


@dataclass
class Customer:
    """A tenant with one config, paused (so that nothing is sent), and its deliveries: one
    failed, one pending behind the pause."""

    uid: str
    name: str
    id: int
    config: Config
    failed: int
    pending: int


def customer(seed, uid: str, name: str) -> Customer:
    tenant = tenants.create(seed.pool, uid=uid, name=name)
    config = seed.config(endpoint=f"http://127.0.0.1:9/{uid}", event_types=[f"{uid}.event"],
                         name=f"{uid}-hooks", tenant_id=tenant.id)
    health.pause(seed.pool, PLATFORM, config.id, reason="staged")
    failed = seed.delivery(config, status="failed", next_attempt_at=None,
                           last_status_code=500, last_error="HTTP 500", **UNCLAIMED)
    pending = seed.delivery(config)
    return Customer(uid, name, tenant.id, config, failed, pending)


def signed_in(browser, url: str, token: str):
    """Return a page signed in with `token` once its overview is drawn, its auto-refresh
    stopped, and its console: a page still loading, or read again on its own, would draw
    over the page a click leads to, and a wait for that one could find it instead."""
    page, console = open_page(browser)
    sign_in(page, url, token)
    page.wait_for_selector("main h1:text-is('Overview')")
    page.wait_for_selector("main .loading", state="detached")
    page.click("#live-toggle")
    page.wait_for_selector("#live-toggle:text-is('Start auto-refresh')")
    return page, console


def column(page, header: str) -> list[str]:
    """Return the texts of the listing's column `header`."""
    headers = page.locator("main table thead th").all_inner_texts()
    cells = page.locator(f"main table tbody tr td:nth-child({headers.index(header) + 1})")
    return cells.all_inner_texts()


def refused_words(page) -> list[str]:
    shown = page.locator("body").inner_text()
    return [word for word in REFUSED if word in shown]


def test_a_platform_operator_picks_a_tenant_and_sees_only_its_configs_and_deliveries(
        browser, service_url, seed, operator_token):
    acme = customer(seed, "cus_acme", "Acme Corp")
    globex = customer(seed, "cus_globex", "Globex")
    page, console = signed_in(browser, service_url, operator_token)
    redrawn(page, lambda: page.click("#nav >> text=Configs"))
    assert {"Acme Corp", "Globex"} <= set(column(page, "Tenant"))
    assert page.locator("#tenant-pick-chosen").inner_text() == "every tenant"

    page.fill("#tenant-pick", "acme")
    redrawn(page, lambda: page.click("#tenant-pick-options li:has-text('Acme Corp')"))
    assert "tenant=cus_acme" in page.url
    assert column(page, "Name") == ["cus_acme-hooks"]
    assert column(page, "Tenant") == ["Acme Corp"]
    assert page.locator("#tenant-pick-chosen").inner_text().startswith("Acme Corp")

    redrawn(page, lambda: page.click("#nav >> text=Deliveries"))
    assert "tenant=cus_acme" in page.url
    assert set(column(page, "Id")) == {str(acme.failed), str(acme.pending)}
    assert set(column(page, "Tenant")) == {"Acme Corp"}
    shoot(page, "deliveries-of-a-tenant")

    redrawn(page, lambda: page.click("#nav >> text=Overview"))
    assert page.locator("main h1").inner_text() == "Overview: Acme Corp"
    failed = page.locator("section[aria-label='Deliveries by status'] a.stat",
                          has_text="failed")
    assert failed.locator("strong").inner_text() == "1"
    assert page.locator("text=rejected broker messages").count() == 0  # the platform's

    # An address narrowed to a tenant is shared as it is; its uid may be typed, too.
    shared, shared_console = signed_in(browser, service_url, operator_token)
    redrawn(shared, lambda: shared.goto(f"{service_url}/#/deliveries?tenant=cus_globex"))
    assert set(column(shared, "Id")) == {str(globex.failed), str(globex.pending)}
    assert shared.locator("#tenant-pick-chosen").inner_text().startswith("Globex")
    shared.fill("#tenant-pick", "cus_acme")
    redrawn(shared, lambda: shared.click("#tenant-pick-options li:has-text('Acme Corp')"))
    assert set(column(shared, "Id")) == {str(acme.failed), str(acme.pending)}
    redrawn(shared, lambda: shared.click("#tenant-pick-chosen button"))  # every tenant again
    assert "tenant=" not in shared.url
    assert {str(acme.failed), str(globex.failed)} <= set(column(shared, "Id"))
    assert console.errors == [] and shared_console.errors == []


def test_the_tenants_page_lists_tenants_with_their_counts_and_opens_one(
        browser, service_url, seed, operator_token):
    initech = customer(seed, "cus_initech", "Initech")
    customer(seed, "cus_hooli", "Hooli")
    page, console = signed_in(browser, service_url, operator_token)
    redrawn(page, lambda: page.click("#nav >> text=Tenants"))
    row = page.locator("main tbody tr[data-uid='cus_initech']")
    cells = row.locator("td").all_inner_texts()
    headers = page.locator("main table thead th").all_inner_texts()
    listed = dict(zip(headers, cells, strict=True))
    assert listed["Tenant"].split("\n") == ["Initech", "cus_initech"]
    assert (listed["Queue depth"], listed["Failed deliveries"]) == ("1", "1")
    assert listed["Oldest sendable waits"] == "—"  # its one pending delivery is held
    shoot(page, "tenants")

    redrawn(page, lambda: page.fill("#tenant-search", "cus_initech"))  # by uid
    assert column(page, "Tenant") == ["Initech\ncus_initech"]
    redrawn(page, lambda: page.fill("#tenant-search", "nite"))  # by a piece of the name
    assert column(page, "Tenant") == ["Initech\ncus_initech"]

    redrawn(page, lambda: page.click("main tbody >> text=Initech"))
    assert page.locator("main h1").inner_text() == "Initech"
    configs = page.locator("section[aria-label='Its configs']")
    assert configs.locator("td a").first.inner_text() == "cus_initech-hooks"
    backlog = page.locator("section[aria-label='Its backlog']")
    assert backlog.locator(f"a:text-is('{initech.pending}')").count() == 1
    failures = page.locator("section[aria-label='Its recent failures']")
    assert failures.locator(f"a:text-is('{initech.failed}')").count() == 1
    assert "HTTP 500" in failures.inner_text()
    assert page.locator("svg.chart").count() == 1
    shoot(page, "tenant")

    redrawn(page, lambda: page.click("main >> text=All its failed deliveries"))
    assert "tenant=cus_initech" in page.url and "status=FAILED" in page.url
    assert column(page, "Id") == [str(initech.failed)]
    assert console.errors == []


def test_a_tenant_token_sees_its_own_tenant_only(browser, service_url, seed):
    own = customer(seed, "cus_umbrella", "Umbrella")
    other = customer(seed, "cus_wayne", "Wayne")
    _, token = tokens.create(seed.pool, name="umbrella-ops", role="operator", tenant_id=own.id)
    page, console = signed_in(browser, service_url, token)
    assert page.locator("#who").inner_text() == "operator · tenant cus_umbrella"
    assert page.locator("#nav a:visible").all_inner_texts() == [
        "Overview", "Configs", "Deliveries", "GraphiQL"]
    assert page.locator("#tenant-bar").is_hidden()
    failed = page.locator("section[aria-label='Deliveries by status'] a.stat",
                          has_text="failed")
    assert failed.locator("strong").inner_text() == "1"
    assert page.locator("text=rejected broker messages").count() == 0
    assert refused_words(page) == []
    shoot(page, "tenant-token-overview")

    redrawn(page, lambda: page.click("#nav >> text=Configs"))
    assert column(page, "Name") == ["cus_umbrella-hooks"]
    assert "Tenant" not in page.locator("main table thead").inner_text()
    redrawn(page, lambda: page.click("#nav >> text=Deliveries"))
    assert set(column(page, "Id")) == {str(own.failed), str(own.pending)}
    assert "Tenant" not in page.locator("main table thead").inner_text()

    # A platform operator's address: what it narrows to is not this token's to choose.
    redrawn(page, lambda: page.goto(f"{service_url}/#/deliveries?tenant=cus_wayne"))
    assert set(column(page, "Id")) == {str(own.failed), str(own.pending)}
    assert str(other.failed) not in column(page, "Id")
    for route in ("#/tenants", "#/tenants/cus_wayne", "#/rejected"):
        redrawn(page, lambda route=route: page.goto(f"{service_url}/{route}"))
        assert page.locator("#platform-only").count() == 1, route
    assert refused_words(page) == []
    assert console.errors == []

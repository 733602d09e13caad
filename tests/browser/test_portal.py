"""The customer portal in Chromium, embedded by a platform's page on another origin: a customer
adds an endpoint, sees a delivery fail and then succeed once replayed, rotates the secret;
refused sessions say so and tell the embedding page; hostile text stays text; the keyboard
alone adds an endpoint; a phone's width works; the page runs under its strict policy."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import requests
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from db import catalog, health, tenants
from db.scope import PLATFORM
from service.local.ports import reserve_port
from tests.browser.conftest import UNCLAIMED, WAIT_MS, open_page, shoot
from tests.browser.embedding import HostPage
from tests.helpers import wait_until
from tests.receivers import Reply

EXPIRED = {"type": "webhooks.portal.session-expired"}
MINT = """mutation ($tenant: String!, $types: [String!], $capabilities: [PortalCapability!]) {
  createPortalSession(tenant: $tenant, eventTypes: $types, capabilities: $capabilities) {
    url token expiresAt } }"""
EXAMPLE = {"order": 42, "total": "9.99"}


@pytest.fixture(scope="module")
def host_port() -> int:
    return reserve_port()


@pytest.fixture(scope="module")
def service_environment(host_port) -> dict[str, str]:
    return {"WEBHOOKS_PORTAL_FRAME_ANCESTORS": f"'self' http://127.0.0.1:{host_port}"}


@pytest.fixture(scope="module")
def host(host_port) -> Iterator[HostPage]:
    page = HostPage(host_port)
    yield page
    page.stop()


@pytest.fixture(scope="module")
def shop(seed) -> str:
    """The tenant the tests act for, and the catalog its customers pick from."""
    tenants.create(seed.pool, uid="cus_shop", name="Shop")
    catalog.create(seed.pool, name="order.created", description="An order was placed.",
                   group_name="Orders", examples=[EXAMPLE],
                   schema={"type": "object", "required": ["order"]})
    catalog.create(seed.pool, name="order.refunded", description="Money went back.",
                   group_name="Orders", examples=[{"order": 42, "refund": True}])
    return "cus_shop"


def mint(service_url: str, token: str, tenant: str, **arguments) -> dict:
    """Mint a portal session the way a platform's server does: over HTTP, a platform token."""
    response = requests.post(f"{service_url}/graphql", timeout=30,
                             headers={"Authorization": f"Bearer {token}"},
                             json={"query": MINT, "variables": {"tenant": tenant, **arguments}})
    body = response.json()
    assert "errors" not in body, body
    return body["data"]["createPortalSession"]


def embedded(browser, host: HostPage, url: str, width: int = 1280):
    """Open the platform's page framing `url`; return the page, the frame and the console."""
    page, console = open_page(browser, width=width)
    page.goto(host.embedding(url))
    frame = page.frame_locator("#portal")
    return page, frame, console


def add_endpoint(frame, url: str, name: str, event_type: str = "order.created") -> str:
    """Add an endpoint through the form; return the secret it reveals."""
    frame.locator("#add-endpoint").click()
    frame.locator("#endpoint-url").fill(url)
    frame.locator("#endpoint-name").fill(name)
    frame.locator(f"input[name=eventType][value='{event_type}']").check()
    frame.locator("#endpoint-save").click()
    return frame.locator("#secret-value").inner_text()


def test_a_customer_adds_an_endpoint_recovers_a_failed_delivery_and_rotates_the_secret(
        browser, service_url, operator_token, host, shop, seed, receiver_factory):
    answer = {"status": 400}
    receiver = receiver_factory(lambda request: Reply(answer["status"], body=b"nope"))
    session = mint(service_url, operator_token, shop)
    assert session["url"] == f"{service_url}/portal?tenant={shop}#token={session['token']}"
    page, frame, console = embedded(browser, host, session["url"])

    frame.locator("main h1:text-is('Endpoints')").wait_for()
    assert frame.locator("main .empty").inner_text().startswith("No endpoint yet.")
    frame.locator("#add-endpoint").click()
    option = frame.locator(".type-option[data-name='order.created']")
    assert "An order was placed." in option.inner_text()
    option.locator("summary").click()
    assert '"required"' in option.locator("details").inner_text()  # its schema, and examples
    shoot(page, "add-endpoint", "portal")
    frame.locator("#endpoint-save").click()
    assert frame.locator("#form-error").inner_text() == \
        "Enter a full URL, such as https://example.com/webhooks."
    frame.locator("#endpoint-url").fill(receiver.url)
    frame.locator("#endpoint-name").fill("Orders")
    option.locator("input").check()
    frame.locator("#endpoint-save").click()
    secret = frame.locator("#secret-value").inner_text()
    assert secret.startswith("whsec_")
    shoot(page, "secret-shown-once", "portal")
    assert "whsec_YOUR_ENDPOINT_SECRET" in frame.locator(".snippet-python").text_content()
    frame.locator("#secret-done").click()

    frame.locator("main h1:has-text('Orders')").wait_for()
    frame.locator("#example-send:text-is('Send order.created')").click()
    first = receiver.wait_for(1)[0]
    assert Webhook(secret).verify(first.body, first.headers)["data"] == EXAMPLE
    frame.locator("#notice:has-text('Sent order.created')").wait_for()

    # The delivery failed for good (a 400); the customer opens it and reads why.
    delivery_id = seed.column("SELECT max(id) FROM deliveries")[0]
    wait_until(lambda: seed.row(delivery_id)["status"] == "failed")
    frame.locator("main button.back").click()
    frame.locator("main tbody button.link").first.click()
    row = frame.locator(f"main tbody tr[data-id='{delivery_id}']")
    assert row.locator(".badge").inner_text() == "failed"
    row.locator("button.link").click()
    frame.locator(f"main h1:has-text('Delivery {delivery_id}')").wait_for()
    attempt = frame.locator("li.attempt").first
    assert "HTTP 400" in attempt.inner_text()
    attempt.locator("summary:text-is('Response')").click()
    assert attempt.locator("pre.response").inner_text() == "nope"
    attempt.locator("summary:text-is('Request sent')").click()
    assert attempt.locator("pre.body").inner_text() == first.body.decode()
    assert first.headers["webhook-signature"] in attempt.locator("dl.headers").inner_text()
    shoot(page, "failed-delivery", "portal")

    answer["status"] = 200  # the customer fixes the receiver, then replays
    frame.locator("#replay-delivery").click()
    frame.locator("#delivery-status:text-is('succeeded')").wait_for(timeout=WAIT_MS)
    assert receiver.wait_for(2)[1].body == first.body
    assert frame.locator("li.attempt").count() == 2
    assert "HTTP 200" in frame.locator("li.attempt").first.inner_text()

    # Rotating with no grace: the old secret stops signing at once.
    frame.locator("main button.back").click()
    frame.locator("#rotate-secret").wait_for()
    shoot(page, "endpoint", "portal")
    frame.locator("#rotate-secret").click()
    frame.locator("#rotate-grace").select_option("0")
    frame.locator("#rotate-confirm").click()
    rotated = frame.locator("#secret-value").inner_text()
    assert rotated.startswith("whsec_") and rotated != secret
    frame.locator("#secret-done").click()
    frame.locator("#example-send:text-is('Send order.created')").click()
    third = receiver.wait_for(3)[2]
    assert Webhook(rotated).verify(third.body, third.headers)["data"] == EXAMPLE
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(third.body, third.headers)
    assert console.errors == []
    assert page.evaluate("window.received") == []


def test_the_portal_is_served_under_a_strict_policy_framed_only_where_allowed(
        service_url, host, shop):
    response = requests.get(f"{service_url}/portal", timeout=30)
    policy = response.headers["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {host.origin}" in policy
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "Set-Cookie" not in response.headers
    assets = re.findall(r'(?:src|href)="(/portal/[^"]+)"', response.text)
    assert assets
    for asset in assets:
        served = requests.get(f"{service_url}{asset}", timeout=30)
        assert served.status_code == 200
        assert served.headers["Content-Security-Policy"] == policy


def ended(page, frame, words: str) -> None:
    """Wait for the portal to say its session ended in `words`, and for the embedding page to
    have heard of it."""
    assert frame.locator("#session-ended h1").inner_text() == words
    page.wait_for_function("window.received.length > 0")
    assert page.evaluate("window.received") == [EXPIRED]


def test_a_tampered_foreign_revoked_or_expired_session_is_refused_in_words_and_posted(
        browser, service_url, operator_token, host, shop, seed):
    session = mint(service_url, operator_token, shop)
    tampered = session["url"][:-3] + ("AAA" if not session["url"].endswith("AAA") else "BBB")
    page, frame, _ = embedded(browser, host, tampered)
    ended(page, frame, "Your session has ended: it expired or was revoked.")

    tenants.create(seed.pool, uid="cus_other", name="Other")
    foreign = mint(service_url, operator_token, "cus_other")["token"]
    page, frame, console = embedded(browser, host,
                                    f"{service_url}/portal?tenant={shop}#token={foreign}")
    ended(page, frame, "This session belongs to another account.")
    assert console.errors == []

    revoked = mint(service_url, operator_token, shop)
    page, frame, _ = embedded(browser, host, revoked["url"])
    frame.locator("main h1:text-is('Endpoints')").wait_for()
    requests.post(f"{service_url}/graphql", timeout=30,
                  headers={"Authorization": f"Bearer {operator_token}"},
                  json={"query": f'mutation {{ revokePortalSessions(tenant: "{shop}") }}'})
    frame.locator("#add-endpoint").click()  # the next call is refused
    ended(page, frame, "Your session has ended: it expired or was revoked.")

    expiring = mint(service_url, operator_token, shop)
    page, frame, _ = embedded(browser, host, expiring["url"])
    frame.locator("main h1:text-is('Endpoints')").wait_for()
    assert seed.rows("UPDATE portal_sessions SET expires_at = now() - interval '1 s', "
                     "created_at = now() - interval '1 h' WHERE revoked_at IS NULL "
                     "RETURNING id")
    frame.locator("#add-endpoint").click()
    ended(page, frame, "Your session has ended: it expired or was revoked.")


HOSTILE = ['<script>window.pwned = 1</script>', '"><img src=x onerror="window.pwned = 1">',
           "مرحبا بالعالم 🎉 שלום 👋🏽"]


def test_hostile_names_types_and_payloads_render_as_inert_readable_text(
        browser, service_url, operator_token, host, seed):
    tenant = tenants.create(seed.pool, uid="cus_hostile", name=HOSTILE[1])
    catalog.create(seed.pool, name="hostile.event", description=HOSTILE[0] + HOSTILE[2],
                   group_name=HOSTILE[1], examples=[{"text": HOSTILE}])
    config = seed.config(endpoint="http://127.0.0.1:9/hostile", name=" ".join(HOSTILE),
                         event_types=[HOSTILE[0], HOSTILE[1], "hostile.event"],
                         tenant_id=tenant.id)
    health.pause(seed.pool, PLATFORM, config.id, reason="staged")
    _, (delivery,) = seed.event(type="hostile.event", payload={"note": HOSTILE},
                                tenant_id=tenant.id)
    seed.set(delivery, status="failed", next_attempt_at=None, last_error=HOSTILE[1],
             **UNCLAIMED)
    session = mint(service_url, operator_token, "cus_hostile")
    page, frame, console = embedded(browser, host, session["url"])
    listed = frame.locator(f"main tbody tr[data-id='{config.id}']").inner_text()
    for text in HOSTILE:
        assert text in listed
    frame.locator("main tbody button.link").first.click()
    frame.locator(f"main tbody tr[data-id='{delivery}'] button.link").click()
    frame.locator(f"main h1:has-text('Delivery {delivery}')").wait_for()
    assert json.loads(frame.locator("#request-body").inner_text())["data"] == {"note": HOSTILE}
    assert HOSTILE[1] in frame.locator("main dl.facts").inner_text()
    frame.locator("main button.back:text-is('← The endpoint')").click()
    frame.locator("main button.back:text-is('← All endpoints')").click()
    frame.locator("#add-endpoint").click()
    option = frame.locator(".type-option[data-name='hostile.event']")
    assert HOSTILE[0] + HOSTILE[2] in option.inner_text()
    assert frame.locator(f"h3:text-is('{HOSTILE[1]}')").count() == 1
    portal = page.frame(url=re.compile(r"/portal"))
    assert portal.evaluate("window.pwned") is None
    assert portal.evaluate("document.querySelectorAll('main img, main script').length") == 0
    assert console.errors == []


def test_the_keyboard_alone_adds_an_endpoint(browser, service_url, operator_token, host, shop,
                                             receiver):
    session = mint(service_url, operator_token, shop)
    page, frame, console = embedded(browser, host, session["url"])
    frame.locator("main h1:text-is('Endpoints')").wait_for()
    portal = page.frame(url=re.compile(r"/portal"))

    def tab_to(selector: str) -> None:
        for _ in range(60):
            page.keyboard.press("Tab")
            if portal.evaluate(f"document.activeElement.matches({selector!r})"):
                return
        raise AssertionError(f"Tab never reached {selector}")

    tab_to("#add-endpoint")
    page.keyboard.press("Enter")
    frame.locator("#endpoint-url").wait_for()
    assert portal.evaluate("document.activeElement.id") == "endpoint-url"
    page.keyboard.type(receiver.url)
    tab_to("#endpoint-name")
    page.keyboard.type("Typed")
    tab_to("input[value='order.refunded']")
    page.keyboard.press("Space")
    tab_to("#endpoint-save")
    page.keyboard.press("Enter")
    frame.locator("#secret-value").wait_for()
    tab_to("#secret-done")
    page.keyboard.press("Enter")
    frame.locator("main h1:has-text('Typed')").wait_for()
    assert "order.refunded" in frame.locator("main dl.facts").first.inner_text()
    assert console.errors == []


def test_a_phone_width_shows_every_part_without_sideways_scrolling(
        browser, service_url, operator_token, shop, receiver):
    session = mint(service_url, operator_token, shop)
    page, console = open_page(browser, width=390, height=844)
    page.goto(session["url"] + "")
    page.locator("#add-endpoint").click()
    add = page.locator("#endpoint-url")
    add.fill(receiver.url)
    page.locator("#endpoint-name").fill("Phone")
    page.locator("input[name=eventType][value='order.created']").check()
    page.locator("#endpoint-save").click()
    page.locator("#secret-done").click()
    page.locator("main h1:has-text('Phone')").wait_for()
    for selector in ("#example-send", "#recover-preview", "#rotate-secret"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert console.errors == []


def test_the_theme_comes_from_the_address(browser, service_url, operator_token, host, shop):
    session = mint(service_url, operator_token, shop)
    themed = session["url"].replace("#", "&accent=%23ff6600&theme=dark&header=hide#")
    page, frame, console = embedded(browser, host, themed)
    frame.locator("main h1:text-is('Endpoints')").wait_for()
    portal = page.frame(url=re.compile(r"/portal"))
    assert portal.evaluate("getComputedStyle(document.documentElement)"
                           ".getPropertyValue('--accent').trim()") == "#ff6600"
    assert portal.evaluate("document.documentElement.dataset.theme") == "dark"
    assert not frame.locator("#portal-header").is_visible()
    assert "#token=" not in portal.url  # the token left the address once read
    assert console.errors == []


def test_a_filter_is_written_tested_against_a_catalog_example_and_saved(
        browser, service_url, operator_token, host, shop, seed, receiver):
    session = mint(service_url, operator_token, shop)
    _, frame, console = embedded(browser, host, session["url"])
    frame.locator("main h1:text-is('Endpoints')").wait_for()
    frame.locator("#add-endpoint").click()
    frame.locator("#endpoint-url").fill(receiver.url)
    frame.locator("#endpoint-name").fill("Big orders")
    frame.locator("input[name=eventType][value='order.created']").check()
    text, result = frame.locator("#endpoint-filter"), frame.locator("#filter-result")
    # Other tests of the module may add types to the shared catalog: pick the example by name.
    frame.locator("#filter-example").select_option(label="order.created")
    assert json.loads(frame.locator("#filter-example-payload").text_content()) == EXAMPLE

    def tested(filter_text: str) -> str:
        text.fill(filter_text)
        frame.locator("#filter-test").click()  # disabled at once while the service answers
        frame.locator("#filter-test:enabled").wait_for()
        return result.inner_text()

    assert tested('{"order": ').startswith("The filter is not JSON")
    assert tested('{"order": {"$gt": 100}}') == \
        'Not matched: order is 42, which fails {"$gt": 100}'
    assert "not-matched" in result.get_attribute("class")
    assert tested('{"order": {"$gtt": 1}}').startswith(
        "Invalid input: filter.order.$gtt: unknown operator $gtt")
    assert tested('{"order": {"$gte": 40}, "total": {"$regex": "^9\\\\."}}') == \
        'Matched: order is 42, which satisfies {"$gte": 40}; total is "9.99", which ' \
        'satisfies {"$regex": "^9\\\\."}'
    frame.locator("#filter-example").select_option(label="order.refunded")
    assert result.is_hidden()
    assert tested('{"refund": true}') == 'Matched: refund is true, which satisfies ' \
                                         '{"$eq": true}'

    text.fill('{"order": {"$gte": 40}}')
    frame.locator("#endpoint-save").click()
    frame.locator("#secret-done").click()
    frame.locator("main h1:has-text('Big orders')").wait_for()
    assert json.loads(frame.locator("#endpoint-filter-shown").inner_text()) == \
        {"order": {"$gte": 40}}
    assert frame.locator("#filtered-out").inner_text() == "0 events filtered out so far."
    (stored,) = seed.column("SELECT filter::text FROM configs WHERE name = 'Big orders'")
    assert json.loads(stored) == {"order": {"$gte": 40}}

    frame.locator("#edit-endpoint").click()
    assert json.loads(text.input_value()) == {"order": {"$gte": 40}}
    text.fill("")  # no filter: every event of its types
    frame.locator("#endpoint-save").click()
    frame.locator("main h1:has-text('Big orders')").wait_for()
    assert frame.locator("#endpoint-filter-shown").count() == 0
    assert seed.column("SELECT filter FROM configs WHERE name = 'Big orders'") == [None]
    assert console.errors == []

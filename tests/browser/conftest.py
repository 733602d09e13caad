"""A real service for browser tests: `webhooks web` (gunicorn) and `webhooks worker` on one
database, real receivers, and headless Chromium (Debian's package) driven by Playwright.

Without Chromium (or Playwright) the browser tests are skipped with a reason that says so
(pytest -ra prints it, and tests/conftest.py repeats it at the end of the run); under CI
(CI=true) they fail instead (tests/integration/test_browser_skip.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from db import tokens
from db.adhoc import dsn_for
from db.pool import ConnectionPool
from service.local.ports import reserve_port
from tests.factories import Factories
from tests.helpers import worker_process

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("WEBHOOKS_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = ROOT / "docs" / "dashboard"
WAIT_MS = 60_000  # the longest wait for anything on a page (the CI machine is busy)
# Staging a state over a claim the running worker may hold: the claim is cleared with it, so
# that its result moves nothing and no token is left outside `delivering` (a constraint).
UNCLAIMED = {"claim_token": None, "claimed_at": None, "claimed_by": None}
NO_CHROMIUM = ("browser tests NOT run: no Chromium at {path} (apt-get install chromium, or "
               "set WEBHOOKS_CHROMIUM)")
NO_PLAYWRIGHT = ("browser tests NOT run: Playwright for Python is not installed "
                 "(pip install -e '.[dev]')")


def _missing() -> str | None:
    """Say what the browser tests lack, if anything."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return NO_PLAYWRIGHT
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        return NO_CHROMIUM.format(path=CHROMIUM)
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """Return the Chromium binary; skip (fail under CI) when it or Playwright is missing."""
    message = _missing()
    if message:
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run them (.ci/run installs Chromium)")
        pytest.skip(message)
    return CHROMIUM


def _wait_healthy(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"webhooks web exited with {process.returncode}")
        try:
            if requests.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError("webhooks web did not become ready")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def service_dsn(server_dsn, database_factory, template_database) -> str:
    """One database for the module's running service."""
    return dsn_for(server_dsn, database_factory(template=template_database))


@pytest.fixture(scope="module")
def service_environment() -> dict[str, str]:
    """Settings of the module's `webhooks web` beyond the usual ones (a module overrides it)."""
    return {}


@pytest.fixture(scope="module")
def service_url(chromium, service_dsn, service_environment) -> Iterator[str]:
    """Run `webhooks web` and `webhooks worker` on the module's database; yield the web URL."""
    port = reserve_port()
    env = {**os.environ, "DATABASE_URL": service_dsn, "WEB_CONCURRENCY": "1",
           "WEBHOOKS_METRICS_PORT": "0",
           "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true",  # the receivers are on 127.0.0.1
           **service_environment}
    web = subprocess.Popen([sys.executable, "-m", "service", "web", "--port", str(port)],
                           cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    worker = worker_process(service_dsn, WEBHOOKS_MIN_BACKOFF="1s", WEBHOOKS_MAX_BACKOFF="2s",
                            WEBHOOKS_RETRY_PERIOD="1s")
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, web)
        yield url
    finally:
        _stop(web)
        _stop(worker)


@pytest.fixture(scope="module")
def service_pool(service_dsn) -> Iterator[ConnectionPool]:
    pool = ConnectionPool(service_dsn, size=4)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def seed(service_pool) -> Factories:
    """Factories on the service's database."""
    return Factories(service_pool)


@pytest.fixture(scope="module")
def operator_token(service_pool) -> str:
    return tokens.create(service_pool, name="browser-operator", tenant_id=None, role="operator")[1]


@pytest.fixture(scope="module")
def viewer_token(service_pool) -> str:
    return tokens.create(service_pool, name="browser-viewer", tenant_id=None, role="viewer")[1]


@pytest.fixture(scope="module")
def browser(chromium) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


class Console:
    """The errors a page logged (console errors and uncaught exceptions)."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))


def open_page(browser, width: int = 1280, height: int = 900):
    """Return a new page of a fresh browser session, `width` px wide, and its console."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    return page, Console(page)


def sign_in(page, url: str, token: str) -> None:
    page.goto(f"{url}/")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_selector("#nav:not([hidden])")


def redrawn(page, action) -> None:
    """Run `action` (a click that moves the page on) and return once the page it leads to is
    drawn: what is shown before is marked stale first, so a wait that follows never finds the
    page that was there (which may show the same words) before it is replaced."""
    page.evaluate("document.querySelectorAll('main > *')"
                  ".forEach((element) => { element.dataset.stale = '1'; })")
    action()
    page.wait_for_function("""() => {
        const main = document.querySelector('main');
        return main.children.length > 0 && !main.querySelector('[data-stale], .loading');
    }""")


def shoot(page, name: str, folder: str = "dashboard") -> None:
    """Save a screenshot as docs/FOLDER/NAME.png when WEBHOOKS_SCREENSHOTS=1."""
    if os.environ.get("WEBHOOKS_SCREENSHOTS") == "1":
        target = SCREENSHOTS.parent / folder
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / f"{name}.png"), full_page=True)

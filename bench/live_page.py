"""`python -m bench live-page`: what one open dashboard page costs the database, live.

A dashboard page reads itself again every 10 s while it is open. For each size (default
1,000 and 100,000 configs; among them a few with an open circuit, a pause, failures, failed
deliveries and attempts still waiting for an answer, so that every section of every page has
rows), the run fills a database, serves it with `webhooks web`, opens each page in headless
Chromium (Debian's, driven by Playwright) with the page's clock in the run's hands, moves
that clock one minute on in refresh-sized steps (each step waits for the page's requests to
be answered), and reads pg_stat_statements: the statements the page's requests ran in that
minute (transaction control left out), their execution time and the rows they returned.

Per page and size: GraphQL requests, statements, milliseconds of database time and rows per
minute. What a page costs must not grow with the number of configs.

Prints progress on stderr and a table on stdout; writes the JSON (default
bench/results/live_page.json). Needs Chromium (WEBHOOKS_CHROMIUM, default /usr/bin/chromium)
and Playwright for Python (the dev extra).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from bench import environment as env
from bench import history_api
from db.adhoc import fresh_database, sql
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

REFRESH_SECONDS = 10  # the dashboard's refresh period
STEPS = 60 // REFRESH_SECONDS  # one minute of refreshes
BUSY = 40  # configs with deliveries; the others are idle
PER_BUSY = 25  # deliveries of each busy config
PAGES = {  # name -> the page's address (ids filled in once the database exists)
    "overview": "#/",
    "configs": "#/configs",
    "a config": "#/configs/{config}",
    "deliveries": "#/deliveries",
    "failed deliveries": "#/deliveries?status=FAILED",
    "a delivery": "#/deliveries/{delivery}",
}
CHROMIUM = os.environ.get("WEBHOOKS_CHROMIUM", "/usr/bin/chromium")
EXIT_USAGE = 2
# What the page's requests sent since the last reset, most called first: the statements
# themselves, not those a function they call runs inside them, and neither transaction
# control nor the reading of the statistics.
STATEMENTS = r"""
SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 120)
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND toplevel AND query !~* '^\s*(BEGIN|COMMIT|ROLLBACK|SET|SHOW)\y'
  AND query !~* 'pg_stat_statements'
ORDER BY calls DESC, total_exec_time DESC
"""
MOST_CALLED = 5  # statements named in the results, per page
STAGE = """
UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, last_status_code = 500,
       last_error = 'HTTP 500: upstream down', attempt_count = 1
WHERE id % 5 = 0;
INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number, replay_generation, endpoint,
                               outcome, status_code, duration_ms, response_excerpt)
SELECT 1, id, 1, 0, 'http://127.0.0.1:9/hook', 'http_error', 500, 12, 'upstream down'
FROM deliveries WHERE status = 'failed';
UPDATE deliveries SET status = 'delivering', claimed_at = now() - interval '1 minute',
       claimed_by = 'elsewhere', claim_token = gen_random_uuid()
WHERE id IN (SELECT id FROM deliveries WHERE status = 'pending' ORDER BY id LIMIT 3);
INSERT INTO config_attempt_counts (config_id, period_start, attempts, succeeded)
SELECT id, attempt_period(now()), 50, 40 FROM configs WHERE id LIKE 'busy-%';
UPDATE config_health SET circuit = 'open', opened_at = now(),
       next_probe_at = now() + interval '1 hour', consecutive_failures = 5,
       last_failure = 'HTTP 500', last_failure_at = now()
WHERE config_id IN ('busy-1', 'busy-2', 'busy-3');
UPDATE config_health SET paused_at = now(), reason = 'receiver migrating'
WHERE config_id IN ('busy-4', 'busy-5');
"""


def run(options: argparse.Namespace, progress) -> dict:
    from playwright.sync_api import sync_playwright

    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine(), "sizes": {}}
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg, \
            sync_playwright() as playwright:
        env.statement_stats(pg)
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            for size in options.sizes:
                progress(f"{size:,} configs: filling")
                dsn = _filled(pg, size)
                results["sizes"][str(size)] = _measure(browser, dsn, progress)
        finally:
            browser.close()
    return results


def _filled(pg, size: int) -> str:
    """A database of `size` configs, BUSY of them with deliveries in every state the pages
    show; return its DSN."""
    dsn = fresh_database(pg.dsn, f"live_page_{size}")
    sql(dsn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", autocommit=True)
    env.add_configs(dsn, "http://127.0.0.1:9/hook", size - BUSY, event_type="idle",
                    prefix="idle")
    env.add_configs(dsn, "http://127.0.0.1:9/hook", BUSY, event_type="busy", prefix="busy")
    env.prefill(dsn, PER_BUSY, prefix="busy", event_type="busy", due_in="1 hour")
    sql(dsn, STAGE)
    sql(dsn, "VACUUM ANALYZE", autocommit=True)
    return dsn


def _measure(browser, dsn: str, progress) -> dict:
    """Each page's requests, statements, database time and rows in one minute."""
    (delivery,) = sql(dsn, "SELECT min(id) FROM deliveries WHERE status = 'failed'")[0]
    addresses = {name: page.format(config="busy-1", delivery=delivery)
                 for name, page in PAGES.items()}
    measured = {}
    with history_api.web(dsn) as url:
        token = env.api_token(dsn, "operator", "bench-live")
        for name, address in addresses.items():
            measured[name] = _one_minute(browser, url, token, address, dsn)
            progress(f"  {name}: {measured[name]['requests']} requests, "
                     f"{measured[name]['statements']} statements, "
                     f"{measured[name]['database_ms']} ms")
    return measured


def _one_minute(browser, url: str, token: str, address: str, dsn: str) -> dict:
    """Open `address` signed in, let it refresh for one minute of its clock; return what
    that minute cost."""
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    try:
        page.clock.install()
        page.goto(f"{url}/")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_selector("#nav:not([hidden])")
        page.goto(f"{url}/{address}")
        expect(page.locator("#live-age")).to_have_text(re.compile("^updated"), timeout=60_000)
        page.wait_for_load_state("networkidle")
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url) if r.url.endswith("/graphql")
                else None)
        sql(dsn, "SELECT pg_stat_statements_reset()")
        started = time.perf_counter()
        for _ in range(STEPS):
            with page.expect_response(lambda r: r.url.endswith("/graphql"), timeout=60_000):
                page.clock.fast_forward(REFRESH_SECONDS * 1000)
            page.wait_for_load_state("networkidle")
        elapsed = time.perf_counter() - started
        sent = sql(dsn, STATEMENTS)
    finally:
        context.close()
    statements = sum(calls for calls, _, _, _ in sent)
    return {"requests": len(requests), "statements": statements,
            "database_ms": round(sum(ms for _, ms, _, _ in sent), 1),
            "rows": sum(rows for _, _, rows, _ in sent),
            "statements_per_request": round(statements / max(1, len(requests)), 1),
            "wall_seconds": round(elapsed, 1),
            "most_called": [{"calls": calls, "statement": text}
                            for calls, _, _, text in sent[:MOST_CALLED]]}


def table(results: dict) -> str:
    lines = [f"one open page, per minute ({REFRESH_SECONDS} s refresh)",
             f"{'page':<20} {'configs':>9} {'requests':>9} {'statements':>11} "
             f"{'db ms':>8} {'rows':>9}"]
    for name in PAGES:
        for size, pages in results["sizes"].items():
            row = pages[name]
            lines.append(f"{name:<20} {int(size):>9,} {row['requests']:>9} "
                         f"{row['statements']:>11} {row['database_ms']:>8} {row['rows']:>9,}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench live-page", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=env.numbers(BUSY + 1), default=[1_000, 100_000],
                        help="numbers of configs, separated by / (default 1000/100000)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="one small size, fsync off: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "live_page.json",
                        help="where to write the JSON (default bench/results/live_page.json)")
    options = parser.parse_args(argv)
    if options.quick:
        options.sizes, options.fast_unsafe = [100], True
    if not Path(CHROMIUM).exists():
        print(f"python -m bench live-page: no Chromium at {CHROMIUM} (apt-get install "
              "chromium, or set WEBHOOKS_CHROMIUM)", file=sys.stderr)
        return EXIT_USAGE
    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

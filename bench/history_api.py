"""Time every dashboard query of the GraphQL API over HTTP on a database full of history."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import requests

from bench.scenarios import _percentile
from db import tokens
from db.adhoc import sql
from db.pool import ConnectionPool
from service.local.ports import reserve_port
from service.local.processes import ROOT

LIST = """
query ($filter: DeliveryFilter, $first: Int, $after: String) {
  deliveries(filter: $filter, first: $first, after: $after) {
    edges { node { id eventId eventType configId status attemptCount createdAt updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}"""
DELIVERY = """
query ($id: ID!) {
  delivery(id: $id) {
    id status attemptCount payload
    attempts { id attemptNumber outcome statusCode durationMs responseExcerpt error createdAt }
  }
}"""
STATS = "{ stats { byStatus { status count } queueDepth oldestDueAgeSeconds rejectedEvents } }"
CONFIGS = "{ configs(first: 50) { edges { node { id name active } } } }"
BASELINE = "{ __typename }"  # HTTP, the token check and GraphQL, no delivery query
PAGE = 50  # rows per list page, as a dashboard shows them


@contextlib.contextmanager
def web(dsn: str, **settings: str) -> Iterator[str]:
    """Run `webhooks web` (gunicorn, gevent worker) on a free port, with `settings`
    (environment variables); yield its base URL."""
    port = reserve_port()
    environment = {**os.environ, "DATABASE_URL": dsn, "PORT": str(port),
                   "WEBHOOKS_LOG_LEVEL": "warning", **settings}
    process = subprocess.Popen([sys.executable, "-m", "service", "web"], cwd=ROOT,
                               env=environment, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"{url}/healthz", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("webhooks web did not become ready")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def calls(dsn: str) -> dict:
    """Return each dashboard call to time: name → (query, variables or a variables factory).

    The entry "deep before" is the time before which the deep page starts.
    """
    rows = sql(dsn, "SELECT min(created_at), max(created_at) FROM deliveries"
                        " WHERE config_id LIKE 'history-%%'")
    oldest, newest = rows[0]
    old_day = oldest + (newest - oldest) / 3
    window = {"createdAfter": _iso(old_day), "createdBefore": _iso(old_day + timedelta(days=1))}
    hour = {"createdAfter": _iso(newest - timedelta(hours=2)),
            "createdBefore": _iso(newest - timedelta(hours=1))}
    failed_ids = [row[0] for row in sql(
        dsn, "SELECT id FROM deliveries WHERE status = 'failed' ORDER BY id DESC LIMIT 2000")]
    event_ids = [row[0] for row in sql(
        dsn, "SELECT event_id FROM deliveries ORDER BY id DESC LIMIT 2000")]
    big, small = "history-0", "history-49"

    def listing(filter: dict | None = None) -> dict:
        return {"filter": filter, "first": PAGE}

    return {
        "deep before": old_day,
        "baseline: { __typename }": (BASELINE, {}),
        "list first page": (LIST, listing()),
        "list deep page": (LIST, "deep"),
        "list status FAILED": (LIST, listing({"status": ["FAILED"]})),
        "list status PENDING": (LIST, listing({"status": ["PENDING"]})),
        "list status SUCCEEDED": (LIST, listing({"status": ["SUCCEEDED"]})),
        "list status CANCELLED": (LIST, listing({"status": ["CANCELLED"]})),
        "list big config": (LIST, listing({"configId": big})),
        "list small config": (LIST, listing({"configId": small})),
        "list event type": (LIST, listing({"eventType": "type.7"})),
        "list event id": (LIST, lambda: listing({"eventId": random.choice(event_ids)})),
        "list last hour window": (LIST, listing(hour)),
        "list old 1-day window": (LIST, listing(window)),
        "list old window FAILED big config": (LIST, listing(
            {**window, "status": ["FAILED"], "configId": big})),
        "list old window small config": (LIST, listing({**window, "configId": small})),
        "delivery with attempts": (DELIVERY, lambda: {"id": str(random.choice(failed_ids))}),
        "stats": (STATS, {}),
        "configs": (CONFIGS, {}),
    }


class Client:
    """A viewer's HTTP session with one running `webhooks web` and the calls to time on it."""

    def __init__(self, dsn: str, url: str, stack: contextlib.ExitStack) -> None:
        pool = ConnectionPool(dsn, size=1)
        _, token = tokens.create(pool, name=f"bench-history-{time.time_ns()}", tenant_id=None,
                                 role="viewer")
        pool.close()
        self.url = url
        self.session = stack.enter_context(requests.Session())
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.calls = calls(dsn)
        self.deep = _deep_cursor(self.post, self.calls.pop("deep before"))

    def post(self, query: str, variables: dict) -> dict:
        response = self.session.post(f"{self.url}/graphql",
                                     json={"query": query, "variables": variables}, timeout=60)
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"API error: {response.status_code} {body}")
        return body["data"]

    def time(self, name: str) -> float:
        """Make the call `name` once; return its milliseconds."""
        query, variables = self.calls[name]
        if variables == "deep":
            variables = {"first": PAGE, "after": self.deep}
        elif callable(variables):
            variables = variables()
        started = time.perf_counter()
        self.post(query, variables)
        return (time.perf_counter() - started) * 1000


def measure(databases: dict[str, str], *, repeat: int, progress) -> dict:
    """Time each call `repeat` times over HTTP on each database; return ms figures.

    `databases` maps a label to a DSN; each gets its own `webhooks web`. The calls go round
    robin, one of each per round and database, so a shared machine's drifting load weighs
    on every query and database alike; the first round only warms up.
    """
    with contextlib.ExitStack() as stack:
        clients = {label: Client(dsn, stack.enter_context(web(dsn)), stack)
                   for label, dsn in databases.items()}
        names = list(next(iter(clients.values())).calls)
        timings = {(label, name): [] for label in clients for name in names}
        for round_number in range(repeat + 1):
            for name in names:
                for label, client in clients.items():
                    elapsed = client.time(name)
                    if round_number:
                        timings[label, name].append(elapsed)
            if round_number and round_number % max(1, repeat // 4) == 0:
                progress(f"  {round_number}/{repeat} rounds")
    results: dict = {}
    for (label, name), values in timings.items():
        values.sort()
        results.setdefault(name, {"calls": repeat})
        prefix = "" if label == next(iter(databases)) else f"{label}_"
        results[name][f"{prefix}p50_ms"] = round(_percentile(values, 50), 1)
        results[name][f"{prefix}p99_ms"] = round(_percentile(values, 99), 1)
    for name, figures in results.items():
        progress(f"  {name:<36} " + "  ".join(f"{key} {value:>7.1f}"
                                              for key, value in figures.items()
                                              if key != "calls"))
    return results


def _deep_cursor(post, before: datetime) -> str:
    """Return the cursor of the newest delivery created before `before`: a page deep down."""
    data = post("query ($filter: DeliveryFilter) { deliveries(filter: $filter, first: 1) {"
                " pageInfo { endCursor } } }", {"filter": {"createdBefore": _iso(before)}})
    return data["deliveries"]["pageInfo"]["endCursor"]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()

"""`python -m bench tenants`: does the number of tenants cost anything?

In one run, on one PostgreSQL (fsync on), with one receiver, two databases built the same
way: one with `--tenants` tenants (default 100,000) and one with 10. Tenant n has 1 + n % 3
configs (≈ 2 a tenant: 200,000 configs for 100,000 tenants), every one subscribed to
`order.paid`. Everything is created as a platform creates it, through the API of a
`webhooks web` (four calls under way at once), and nothing is vacuumed or analysed by hand:

- creation: tenants one at a time (`createTenant`, the first `--single` of them), the rest
  with `createTenants` (1,000 a call); configs with `createConfigs` (1,000 a call); due
  deliveries with broadcast `publishEvent`s (`tenants`, up to 1,000 uids a call: one event for
  each tenant drawn at random until `--deliveries` are due; at 10 tenants, the same event to
  all ten, as many times as it takes). The rate of each.
- API, at the larger size: p50/p99 over HTTP of the `tenants` pages (first, deep, last,
  searched, by uid, `totalCount`, a page of 100 with `stats`), `tenant(uid) { stats }`, a
  tenant's `configs` (a platform token's filter, the tenant's own token) and its deliveries;
  and the statements one call runs (pg_stat_statements, top level), a page of 100 and of 10
  tenants with and without `stats`: `stats` must be one statement, not one per tenant.
- fan-out: events published one at a time to a tenant with 3 configs, in the 10-tenant and
  the large database: milliseconds per event, and the plans of the ingest statement and of
  the subscriber look-up inside it (auto_explain, nested statements, ANALYZE and BUFFERS).
- dispatch: one worker over each database's due deliveries (the same number): deliveries/s,
  the ratio, the claim's statement time per delivery (pg_stat_statements), and the plans of
  one claim at each size (auto_explain, before the worker starts).

Prints progress on stderr, a table on stdout, and writes the JSON (default
bench/results/tenants.json) and the plans (beside it, tenants-plans.txt). The test suite
runs it at tiny sizes (--quick).
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2
import requests

from bench import environment as env
from bench import history_api
from bench.scenarios import DISPATCH_WHERE, _percentile
from db import events, tenants, tokens
from db.adhoc import fresh_database, sql
from db.deliveries import DEFAULT_RULES
from db.health import RATE_BURST
from db.pool import ConnectionPool
from db.sql import QUERIES
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

PARTS = ("api", "fan-out", "dispatch")
BASELINE = 10  # tenants of the comparison database
EVENT_TYPE = "order.paid"
BATCH = 1_000  # inputs of one createTenants / createConfigs call, uids of one broadcast
CALLS_AT_ONCE = 4  # API calls under way at once while creating
DATABASE_REPEAT = 20  # calls of each API query whose statements are counted and timed
CONCURRENCY = "50"  # WEBHOOKS_DISPATCH_CONCURRENCY of the worker
CLAIM = "%claim_counted%"  # how pg_stat_statements' text of the claim statement is found
RECORD = "%INSERT INTO delivery_attempts%"  # ... and of the record (with its settlement)
CREATE_TENANT = "mutation ($input: CreateTenantInput!) { createTenant(input: $input) { id } }"
CREATE_TENANTS = """
mutation ($inputs: [CreateTenantInput!]!) { createTenants(inputs: $inputs) { id } }"""
CREATE_CONFIGS = """
mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: $inputs) { config { id } } }"""
BROADCAST = """
mutation ($input: PublishEventInput!) { publishEvent(input: $input) { eventId } }"""
TENANT_PAGE = """
query ($filter: TenantFilterInput, $first: Int, $after: String, $last: Int) {
  tenants(filter: $filter, first: $first, after: $after, last: $last) {
    edges { node { uid name createdAt } } pageInfo { hasNextPage endCursor }
  }
}"""
TENANT_STATS_PAGE = """
query ($first: Int) {
  tenants(first: $first) {
    edges { node { uid stats { pending delivering succeeded failed cancelled queueDepth
                               oldestDueAgeSeconds attemptsLastHour failureRatioLastHour } } }
  }
}"""
TENANT_COUNT = "query ($filter: TenantFilterInput) { tenants(filter: $filter) { totalCount } }"
ONE_TENANT = """
query ($uid: String!) {
  tenant(uid: $uid) { uid name stats { pending queueDepth oldestDueAgeSeconds
                                       attemptsLastHour failureRatioLastHour } }
}"""
CONFIG_PAGE = """
query ($filter: ConfigFilter) {
  configs(filter: $filter, first: 50) {
    edges { node { id name endpoint active health { state } tenant { uid } } }
    pageInfo { hasNextPage endCursor } totalCount
  }
}"""
DELIVERY_PAGE = """
query ($filter: DeliveryFilter) {
  deliveries(filter: $filter, first: 50) {
    edges { node { id status eventType configId createdAt } } pageInfo { hasNextPage }
  }
}"""
TARGETS = (
    ("tenants created through the API ≥ 1,000/s", "tenants_created_per_second", ">=", 1000),
    ("configs created through the API ≥ 1,000/s", "configs_created_per_second", ">=", 1000),
    ("deliveries created through the API ≥ 1,000/s", "deliveries_created_per_second", ">=",
     1000),
    ("tenants pages p99 ≤ 50 ms", "tenants_worst_p99_ms", "<=", 50.0),
    ("a tenant's configs p99 ≤ 50 ms", "configs_worst_p99_ms", "<=", 50.0),
    ("Tenant.stats of a page of 100: statements it adds", "stats_statements_100", "<=", 1),
    ("dispatch over many tenants ≥ 0.8 x over 10", "dispatch_ratio", ">=", 0.8),
    ("fan-out ms per event, many tenants ≤ 1.25 x 10", "fan_out_ratio", "<=", 1.25),
)


@dataclass
class World:
    """A database of `size` tenants with their configs and due deliveries."""

    dsn: str
    size: int
    uids: list[str]
    due: int = 0
    created: dict = field(default_factory=dict)


def configs_of(n: int) -> int:
    """Return how many configs tenant number `n` has: 1, 2 or 3."""
    return 1 + n % 3


def uid_of(n: int) -> str:
    return f"cus_{n:06d}"


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine(), "plans": {}}
    parts = set(options.parts)
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        env.statement_stats(pg)
        sql(pg.dsn, "ALTER SYSTEM SET pg_stat_statements.track_planning = on", autocommit=True)
        sql(pg.dsn, "SELECT pg_reload_conf()")
        with env.receiver() as url:
            worlds = {}
            compared = parts & {"fan-out", "dispatch"}  # the API is measured at one size
            for size in (BASELINE, options.tenants) if compared else (options.tenants,):
                progress(f"{size:,} tenants: creating tenants, configs and deliveries ...")
                worlds[size] = _build(pg, url, size, options)
                progress(f"  {worlds[size].created}")
            small, large = worlds.get(BASELINE), worlds[options.tenants]
            results["created"] = {str(size): w.created for size, w in worlds.items()}
            if "api" in parts:
                progress(f"the API at {large.size:,} tenants ...")
                results["api"] = _api(large, options)
                results["plans"]["Tenant.stats of the newest 100 tenants"] = _stats_plan(large)
            if "fan-out" in parts:
                results["fan_out"] = {}
                for world in (small, large):
                    progress(f"fan-out at {world.size:,} tenants ...")
                    results["fan_out"][str(world.size)], results["plans"][
                        f"ingest at {world.size:,} tenants"] = _fan_out(world, options)
            if "dispatch" in parts:
                results["dispatch"] = {}
                for world in (small, large):
                    progress(f"dispatch at {world.size:,} tenants ...")
                    results["plans"][f"claim at {world.size:,} tenants"] = _claim_plan(world)
                    logged = _log_slow_statements(pg, options.log_slow)
                    results["dispatch"][str(world.size)] = _dispatch(world, options)
                    if options.log_slow:
                        results["plans"][f"statements over {options.log_slow} ms while "
                                         f"dispatching at {world.size:,} tenants"] = (
                            _logged_plans(pg, logged))
    results["ratios"] = _ratios(results, options)
    results["targets"] = env.checked_targets(
        TARGETS, lambda key: results["ratios"].get(key))
    return results


def _post(session: requests.Session, api: str, query: str, variables: dict) -> dict:
    response = session.post(f"{api}/graphql", timeout=600,
                            json={"query": query, "variables": variables})
    body = response.json() if response.headers.get("content-type", "").startswith(
        "application/json") else None
    if response.status_code != 200 or not body or body.get("errors"):
        raise RuntimeError(f"API error: {response.status_code} {response.text[:500]}")
    return body["data"]


def _calls(api: str, token: str, query: str, variables: list[dict]) -> float:
    """Send `query` once with each of `variables`, CALLS_AT_ONCE at a time; return the
    seconds it took."""
    sessions = collections.deque()

    def call(given: dict) -> None:
        session = sessions.pop() if sessions else requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        try:
            _post(session, api, query, given)
        finally:
            sessions.append(session)

    started = time.perf_counter()
    with ThreadPoolExecutor(CALLS_AT_ONCE) as pool:
        list(pool.map(call, variables))
    return time.perf_counter() - started


def _rate(count: int, seconds: float) -> dict:
    return {"count": count, "seconds": round(seconds, 2),
            "per_second": round(count / seconds) if seconds else None}


def _build(pg, url: str, size: int, options: argparse.Namespace) -> World:
    """Create `size` tenants, their configs and due deliveries through the API."""
    dsn = fresh_database(pg.dsn, f"tenants_{size}")
    sql(dsn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", autocommit=True)
    world = World(dsn, size, [uid_of(n) for n in range(size)])
    single = min(options.single, size)
    with history_api.web(dsn, WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="true") as api:
        token = env.api_token(dsn, "operator", "bench-tenants")
        inputs = [{"uid": uid, "name": f"Customer {uid[4:]}", "metadata": {"n": n}}
                  for n, uid in enumerate(world.uids)]
        seconds = _calls(api, token, CREATE_TENANT, [{"input": i} for i in inputs[:single]])
        world.created["tenant_one_at_a_time"] = _rate(single, seconds)
        rest = inputs[single:]
        seconds = _calls(api, token, CREATE_TENANTS,
                         [{"inputs": rest[i:i + BATCH]} for i in range(0, len(rest), BATCH)])
        world.created["tenants_at_once"] = _rate(len(rest), seconds)

        configs = [{"tenant": uid, "endpoint": url, "eventTypes": [EVENT_TYPE],
                    "name": f"{uid}-{k}"}
                   for n, uid in enumerate(world.uids) for k in range(configs_of(n))]
        seconds = _calls(api, token, CREATE_CONFIGS,
                         [{"inputs": configs[i:i + BATCH]}
                          for i in range(0, len(configs), BATCH)])
        world.created["configs"] = _rate(len(configs), seconds)

        broadcasts = _broadcasts(world, options.deliveries, options.events_per_tenant)
        wal = _wal(dsn)
        seconds = _calls(api, token, BROADCAST, [
            {"input": {"tenants": uids, "type": EVENT_TYPE, "payload": {"n": n, "text": "x" * 100},
                       "id": f"due-{n}"}} for n, uids in enumerate(broadcasts)])
    world.due = sql(dsn, "SELECT count(*) FROM deliveries WHERE status = 'pending'")[0][0]
    world.created["deliveries"] = _rate(world.due, seconds)
    world.created["deliveries"]["wal_bytes_per_delivery"] = (
        round((_wal(dsn) - wal) / world.due) if world.due else None)
    world.created["broadcasts"] = len(broadcasts)
    return world


def _broadcasts(world: World, deliveries: int, per_tenant: int) -> list[list[str]]:
    """Return the uids of each broadcast that makes about `deliveries` due: tenants drawn at
    random, `per_tenant` events each, or at the baseline size every tenant, again and
    again."""
    numbers = list(range(world.size))
    if world.size == BASELINE:
        per_round = sum(configs_of(n) for n in numbers)
        return [world.uids] * -(-deliveries // per_round)
    random.Random(world.size).shuffle(numbers)
    drawn, total = [], 0
    for n in numbers:
        if total >= deliveries:
            break
        drawn.append(world.uids[n])
        total += configs_of(n) * per_tenant
    return [drawn[i:i + BATCH] for i in range(0, len(drawn), BATCH)] * per_tenant


def _token(dsn: str, role: str, tenant_id: int | None) -> str:
    pool = ConnectionPool(dsn, size=1)
    try:
        return tokens.create(pool, name=f"bench-{uuid.uuid4().hex[:8]}", role=role,
                             tenant_id=tenant_id)[1]
    finally:
        pool.close()


def _api(world: World, options: argparse.Namespace) -> dict:
    """p50/p99 of the tenant calls over HTTP at `world`'s size; statements per call."""
    dsn, size = world.dsn, world.size
    middle = sql(dsn, "SELECT created_at FROM tenants ORDER BY created_at, id OFFSET %s LIMIT 1",
                 (size // 2,))[0][0]
    busy_uid, busy_id = sql(dsn, "SELECT t.uid, t.id FROM tenants t JOIN deliveries d"
                                 " ON d.tenant_id = t.id GROUP BY t.id ORDER BY count(*) DESC,"
                                 " t.id LIMIT 1")[0]
    rare = f"r {size // 2 + 7:06d}"  # one tenant's name
    platform = _token(dsn, "viewer", None)
    own = _token(dsn, "viewer", busy_id)
    settled = _autovacuum_done(dsn, timeout=options.settle)
    timings: dict[str, list[float]] = {}
    statements: dict[str, dict] = {}
    with history_api.web(dsn) as url, requests.Session() as session:
        def post(token: str, query: str, variables: dict) -> dict:
            session.headers["Authorization"] = f"Bearer {token}"
            return _post(session, url, query, variables)

        halfway = {"first": 1, "filter": {"createdBefore": middle.isoformat()}}
        deep = post(platform, TENANT_PAGE, halfway)["tenants"]["pageInfo"]["endCursor"]
        calls = {
            "baseline: { __typename }": (platform, "{ __typename }", {}),
            "tenants, first page (50)": (platform, TENANT_PAGE, {"first": 50}),
            "tenants, a page halfway (after a cursor)": (platform, TENANT_PAGE,
                                                         {"first": 50, "after": deep}),
            "tenants, last page (last: 50)": (platform, TENANT_PAGE, {"last": 50}),
            "tenants, name search, one match": (platform, TENANT_PAGE,
                                                {"first": 50, "filter": {"nameContains": rare}}),
            "tenants, name search, every tenant": (platform, TENANT_PAGE,
                                                   {"first": 50,
                                                    "filter": {"nameContains": "customer"}}),
            "tenants, by uid": (platform, TENANT_PAGE, {"first": 50,
                                                        "filter": {"uid": busy_uid}}),
            "tenants, totalCount": (platform, TENANT_COUNT, {}),
            "tenants, 100 with stats": (platform, TENANT_STATS_PAGE, {"first": 100}),
            "tenant(uid) with stats": (platform, ONE_TENANT, {"uid": busy_uid}),
            "configs of a tenant (platform filter)": (platform, CONFIG_PAGE,
                                                      {"filter": {"tenant": busy_uid}}),
            "configs of a tenant (its own token)": (own, CONFIG_PAGE, {}),
            "deliveries of a tenant (its own token)": (own, DELIVERY_PAGE, {}),
        }
        for token, query, variables in calls.values():
            post(token, query, variables)  # warm: pages read, connections open
        timings = {name: [] for name in calls}
        for _ in range(options.api_repeat):
            for name, (token, query, variables) in calls.items():
                started = time.perf_counter()
                post(token, query, variables)
                timings[name].append((time.perf_counter() - started) * 1000)
        database = {}
        for name, (token, query, variables) in calls.items():
            sql(dsn, "SELECT pg_stat_statements_reset()")
            for _ in range(DATABASE_REPEAT):
                post(token, query, variables)
            database[name] = _statements(dsn)
        for label, query, first in (("100 tenants", TENANT_PAGE, 100),
                                    ("100 tenants with stats", TENANT_STATS_PAGE, 100),
                                    ("10 tenants with stats", TENANT_STATS_PAGE, 10)):
            sql(dsn, "SELECT pg_stat_statements_reset()")
            post(platform, query, {"first": first})
            statements[label] = _statements(dsn)
    return {"tenants": size, "autovacuum_waited_s": settled, "calls": {
        name: {"p50_ms": round(_percentile(sorted(t), 50), 2),
               "p99_ms": round(_percentile(sorted(t), 99), 2),
               "max_ms": round(max(t), 2), "slowest_round": t.index(max(t)),
               "statements": database[name]["count"] / DATABASE_REPEAT,
               "database_ms": round(database[name]["ms"] / DATABASE_REPEAT, 2)}
        for name, t in timings.items()},
        "statements": statements}


def _autovacuum_done(dsn: str, *, timeout: float) -> float:
    """Wait (at most `timeout` seconds) until no autovacuum worker is busy with `dsn`'s tables,
    as it is for a while after the bulk creation: the API is timed at that size in its steady
    state, not in the minute that follows creating it. Return the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        busy = sql(dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                        " current_database() AND backend_type = 'autovacuum worker'")[0][0]
        if not busy:
            break
        time.sleep(1)
    return round(time.monotonic() - started, 1)


def _statements(dsn: str) -> dict:
    """Return the top-level statements run in `dsn` since the last reset (transaction control
    and the benchmark's own reads left out): how many, their milliseconds (planning and
    execution), and each with its calls."""
    rows = sql(dsn, "SELECT calls, total_exec_time + total_plan_time,"
                    " left(regexp_replace(query, '\\s+', ' ', 'g'), 100)"
                    " FROM pg_stat_statements"
                    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname ="
                    " current_database()) AND toplevel"
                    " AND query !~* '^(BEGIN|COMMIT|ROLLBACK|SET|SHOW)'"
                    " AND query NOT LIKE '%%pg_stat_statements%%' ORDER BY calls DESC")
    return {"count": sum(calls for calls, _, _ in rows),
            "ms": sum(ms for _, ms, _ in rows),
            "each": [{"calls": calls, "ms": round(ms, 3), "query": text}
                     for calls, ms, text in rows]}


def _fan_out(world: World, options: argparse.Namespace) -> tuple[dict, str]:
    """Milliseconds per event published to a tenant with 3 configs; the ingest's plans."""
    tenant_id = sql(world.dsn, "SELECT id FROM tenants WHERE uid = %s",
                    (uid_of(2 if world.size > 2 else 0),))[0][0]
    pool = ConnectionPool(world.dsn, size=1)
    times = []
    try:
        for n in range(options.fan_out_events + 5):
            event = events.new_event(f"fan-{n}", EVENT_TYPE, {"n": n}, tenant_id=tenant_id,
                                     max_payload=1 << 20)
            started = time.perf_counter()
            published = events.publish_all(pool, [event])
            if n >= 5:  # the first ones warm the connection and its caches
                times.append((time.perf_counter() - started) * 1000)
            assert len(published[0].delivery_ids) == 3, published
    finally:
        pool.close()
    event = events.new_event("fan-explained", EVENT_TYPE, {"n": 0}, tenant_id=tenant_id,
                             max_payload=1 << 20)
    plans = _explained(world.dsn, lambda cursor: events.ingest(cursor, [event], source="api"))
    times.sort()
    return {"tenants": world.size, "events": len(times),
            "p50_ms": round(statistics.median(times), 2),
            "p99_ms": round(_percentile(times, 99), 2),
            "mean_ms": round(statistics.fmean(times), 2)}, plans


def _stats_plan(world: World) -> str:
    """The plans of the statement that reads the stats of the first page of 100 tenants."""
    ids = [id for (id,) in sql(world.dsn, "SELECT id FROM tenants"
                                          " ORDER BY created_at DESC, id DESC LIMIT 100")]
    return _explained(world.dsn, lambda cursor: cursor.execute(
        QUERIES["tenant_stats"], {"ids": ids, "bound": tenants.STATS_BOUND}))


def _claim_plan(world: World) -> str:
    """The plans of one claim of 50 (rolled back), as a worker's first claim would run it."""
    params = {"limit": 50, "owner": "bench-explain", "cap": DEFAULT_RULES.cap,
              "ramp": DEFAULT_RULES.ramp, "rate_burst": RATE_BURST, "capacity": 50,
              "hold": 3, "room_ids": [], "rooms": [], "token": str(uuid.uuid4())}
    return _explained(world.dsn, lambda cursor: cursor.execute(
        QUERIES["claim_due_deliveries"], params))


def _explained(dsn: str, run_statement) -> str:
    """Run a statement in a transaction that is rolled back, with auto_explain reporting every
    plan (nested statements too: the functions it calls) with times and buffers; return
    them."""
    conn = psycopg2.connect(dsn)
    conn.notices = collections.deque(maxlen=500)
    try:
        with conn.cursor() as cursor:
            for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                            "SET auto_explain.log_analyze = on",
                            "SET auto_explain.log_buffers = on",
                            "SET auto_explain.log_timing = on",
                            "SET auto_explain.log_nested_statements = on",
                            "SET auto_explain.log_level = notice"):
                cursor.execute(setting)
            started = time.perf_counter()
            run_statement(cursor)
            took = (time.perf_counter() - started) * 1000
        conn.rollback()
    finally:
        conn.close()
    return f"(statement took {took:.2f} ms with the plans' instrumentation)\n" + "\n".join(
        notice.strip() for notice in conn.notices)


def _dispatch(world: World, options: argparse.Namespace) -> dict:
    """Deliveries/s of `options.workers` workers over `world`'s due deliveries, after a
    warm-up; the claim statement's time per delivery."""
    sql(world.dsn, "SELECT pg_stat_statements_reset()")
    due = sql(world.dsn, "SELECT count(*) FROM deliveries WHERE status = 'pending'")[0][0]
    wal = _wal(world.dsn)
    with env.workers(world.dsn, options.workers,
                     WEBHOOKS_DISPATCH_CONCURRENCY=CONCURRENCY) as processes:
        result = env.rate_between(world.dsn, DISPATCH_WHERE, due, timeout=options.timeout,
                                  warmup=min(options.warmup, due // 10),
                                  processes=processes)
    calls, milliseconds, claimed = _statement_time(world.dsn, CLAIM)
    records, recording, _ = _statement_time(world.dsn, RECORD)
    sent = sql(world.dsn, f"SELECT count(*) FROM deliveries WHERE {DISPATCH_WHERE}")[0][0]
    result.update(tenants=world.size, due=due, workers=options.workers,
                  wal_bytes_per_delivery=round((_wal(world.dsn) - wal) / sent) if sent else None,
                  claims=calls,
                  claim_ms_per_delivery=round(milliseconds / claimed, 4) if claimed else None,
                  claim_ms_per_call=round(milliseconds / calls, 3) if calls else None,
                  record_ms_per_delivery=round(recording / sent, 4) if sent else None,
                  record_ms_per_call=round(recording / records, 3) if records else None)
    return result


def _statement_time(dsn: str, pattern: str) -> tuple[int, float, int]:
    """Return the calls, milliseconds and rows of the top-level statements whose text matches
    `pattern` (LIKE) since the last reset."""
    calls, milliseconds, rows = sql(
        dsn, "SELECT sum(calls)::bigint, sum(total_exec_time)::float8, sum(rows)::bigint"
             " FROM pg_stat_statements WHERE toplevel AND dbid = (SELECT oid FROM"
             " pg_database WHERE datname = current_database()) AND query LIKE %s",
        (pattern,))[0]
    return int(calls or 0), milliseconds or 0.0, int(rows or 0)


def _log_slow_statements(pg, milliseconds: float | None) -> int:
    """With `milliseconds`, have every new session log the plans of its statements slower
    than that (auto_explain: nested statements, row counts, no timing); return where the
    server's log ends now."""
    if milliseconds:
        for setting in ("session_preload_libraries = 'auto_explain'",
                        f"auto_explain.log_min_duration = {float(milliseconds)}",
                        "auto_explain.log_analyze = on", "auto_explain.log_timing = off",
                        "auto_explain.log_nested_statements = on"):
            sql(pg.dsn, f"ALTER SYSTEM SET {setting}", autocommit=True)
        sql(pg.dsn, "SELECT pg_reload_conf()")
    return pg.log_path.stat().st_size if pg.log_path.exists() else 0


def _logged_plans(pg, start: int, most: int = 20) -> str:
    """Return the first `most` plans the server logged after `start`."""
    with pg.log_path.open(errors="replace") as log:
        log.seek(start)
        text = log.read()
    entries = text.split("LOG:  duration: ")[1:]
    return "\n".join("duration: " + entry.strip() for entry in entries[:most]) + (
        f"\n({len(entries)} logged in all)")


def _wal(dsn: str) -> int:
    """Return the server's WAL position, in bytes (what it wrote since: the difference)."""
    return int(sql(dsn, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")[0][0])


def _ratios(results: dict, options: argparse.Namespace) -> dict:
    ratios: dict = {}
    large = str(options.tenants)
    created = results["created"][large]
    ratios["tenants_created_per_second"] = created["tenants_at_once"]["per_second"]
    ratios["tenant_one_at_a_time_per_second"] = created["tenant_one_at_a_time"]["per_second"]
    ratios["configs_created_per_second"] = created["configs"]["per_second"]
    ratios["deliveries_created_per_second"] = created["deliveries"]["per_second"]
    if "api" in results:
        calls = results["api"]["calls"]
        ratios["tenants_worst_p99_ms"] = max(
            row["p99_ms"] for name, row in calls.items() if name.startswith("tenant"))
        ratios["configs_worst_p99_ms"] = max(
            row["p99_ms"] for name, row in calls.items() if name.startswith("configs"))
        counted = results["api"]["statements"]
        ratios["stats_statements_100"] = (counted["100 tenants with stats"]["count"]
                                          - counted["100 tenants"]["count"])
        ratios["stats_statements_10"] = (counted["10 tenants with stats"]["count"]
                                         - counted["100 tenants"]["count"])
    if "fan_out" in results:
        small, many = results["fan_out"][str(BASELINE)], results["fan_out"][large]
        ratios["fan_out_ratio"] = round(many["p50_ms"] / small["p50_ms"], 3)
    if "dispatch" in results:
        small, many = results["dispatch"][str(BASELINE)], results["dispatch"][large]
        ratios["dispatch_ratio"] = (round(many["per_second"] / small["per_second"], 3)
                                    if small["per_second"] else None)
    return ratios


def table(results: dict) -> str:
    sizes = list(results["created"])
    lines = [f"{'created through the API, per second':<40} "
             + " ".join(f"{int(s):>12,}" for s in sizes)]
    for key, label in (("tenant_one_at_a_time", "tenants, createTenant one at a time"),
                       ("tenants_at_once", "tenants, createTenants (1,000 a call)"),
                       ("configs", "configs, createConfigs (1,000 a call)"),
                       ("deliveries", "deliveries, broadcast publishEvent")):
        lines.append(f"{label:<40} " + " ".join(
            f"{results['created'][s][key]['per_second']!s:>12}" for s in sizes))
    if "api" in results:
        lines.append(f"\nautovacuum finished {results['api']['autovacuum_waited_s']} s after "
                     "the fill")
        lines.append(f"API at {results['api']['tenants']:,} tenants{'':<22} {'p50 ms':>8} "
                     f"{'p99 ms':>8} {'statements':>10} {'database ms':>11}")
        for name, row in results["api"]["calls"].items():
            lines.append(f"  {name:<44} {row['p50_ms']:>8} {row['p99_ms']:>8} "
                         f"{row['statements']:>10} {row['database_ms']:>11}")
        lines.append("statements of one call (top level): " + ", ".join(
            f"{label} {row['count']}" for label, row in results["api"]["statements"].items()))
    if "fan_out" in results:
        lines.append(f"\n{'fan-out to 3 configs, per event':<40} {'p50 ms':>8} {'p99 ms':>8}")
        for size, row in results["fan_out"].items():
            lines.append(f"  {int(size):>9,} tenants{'':<22} {row['p50_ms']:>8} "
                         f"{row['p99_ms']:>8}")
    if "dispatch" in results:
        lines.append(f"\n{'dispatch, 1 worker':<28} {'due':>8} {'per s':>8} "
                     f"{'claim ms/delivery':>18} {'record ms/delivery':>19} "
                     f"{'worker cpu ms/delivery':>23} {'WAL B/delivery':>15}")
        for size, row in results["dispatch"].items():
            lines.append(f"  {int(size):>9,} tenants{'':<9} {row['due']:>8} "
                         f"{row['per_second']:>8} {row['claim_ms_per_delivery']!s:>18} "
                         f"{row['record_ms_per_delivery']!s:>19} "
                         f"{row.get('cpu_ms_per_delivery')!s:>23} "
                         f"{row['wal_bytes_per_delivery']!s:>15}")
    lines.append("")
    lines.extend(f"{name}: {value}" for name, value in results["ratios"].items())
    lines.append("")
    lines.extend(env.target_lines(results["targets"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tenants", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=100_000,
                        help="tenants of the larger database (default 100000)")
    parser.add_argument("--parts", type=env.parts(PARTS), default=list(PARTS),
                        help=f"which parts to run, separated by / (default {'/'.join(PARTS)})")
    parser.add_argument("--single", type=int, default=2_000,
                        help="tenants created one at a time, the rest at once (default 2000)")
    parser.add_argument("--deliveries", type=int, default=22_000,
                        help="deliveries due in each database (default 22000)")
    parser.add_argument("--events-per-tenant", type=int, default=1,
                        help="events each tenant drawn for the due deliveries gets in the "
                             "larger database: 1 spreads them over the most configs, one each "
                             "(default 1)")
    parser.add_argument("--warmup", type=int, default=2_000,
                        help="deliveries sent before the clock starts (default 2000)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes of each dispatch run (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a dispatch run may take (default 600)")
    parser.add_argument("--fan-out-events", type=int, default=200,
                        help="events published to one tenant, timed (default 200)")
    parser.add_argument("--api-repeat", type=int, default=100,
                        help="timed calls of each API query (default 100)")
    parser.add_argument("--settle", type=float, default=300.0,
                        help="seconds the API part waits at most for autovacuum to finish with "
                             "the tables just filled (default 300)")
    parser.add_argument("--log-slow", type=float,
                        help="while dispatching, log the plans of statements slower than this "
                             "many milliseconds (auto_explain) into the plans file")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, short runs: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "tenants.json",
                        help="where to write the JSON (default bench/results/tenants.json); "
                             "the plans go beside it")
    options = parser.parse_args(argv)
    if options.tenants <= BASELINE:
        parser.error(f"--tenants: more than {BASELINE}, the size it is compared with")
    if options.quick:
        options.tenants, options.single, options.deliveries = 60, 5, 300
        options.warmup, options.timeout = 0, 120.0
        options.fan_out_events, options.api_repeat, options.settle = 5, 2, 5.0
        options.fast_unsafe = True

    results = run(options, env.progress)
    plans = results.pop("plans")
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.with_name(options.output.stem + "-plans.txt").write_text("\n\n".join(
        f"=== {name} ===\n{text}" for name, text in plans.items()))
    return env.report(results, table(results), options.output)

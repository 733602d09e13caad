"""`python -m bench configs`: does the number of configs cost anything?

In one run, on one PostgreSQL (fsync on), with one receiver:

- dispatch: at each size (default 1,000, 10,000 and 100,000 configs: half idle, half with a
  few deliveries due) and each number of workers (1 and 4), deliveries/s against the same
  run's figure over 10 configs with as many deliveries; and the claim statement's time per
  delivery it claimed (pg_stat_statements), which should stay flat across sizes;
- latency: a quiet config's publish → arrival p50/p99 with the configs of each size present
  (half idle, half with deliveries due an hour from now) against none;
- hot config: four workers sending to one config against four over ten configs;
- fan-out: one event to 10,000 subscribed configs, stored with its deliveries in one
  transaction: milliseconds per event;
- API: the configs listing over HTTP at the largest size (first page, a search, a health
  state, the last page, totalCount): p50/p99.

Every config is created as a user creates it: through the API (`createConfigs` over HTTP to
a `webhooks web`, 1,000 a call, four calls at once), and nothing is vacuumed or analysed by
hand after it; the rate of creation is reported too. The deliveries are stored directly.

Prints progress on stderr, a table on stdout, and writes the JSON (default
bench/results/configs.json). The test suite runs it at tiny sizes (--quick).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from bench import environment as env
from bench import history_api
from bench.scenarios import DISPATCH_WHERE, _percentile
from db.adhoc import fresh_database, sql
from db.scope import DEFAULT_TENANT_ID
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

PARTS = ("dispatch", "latency", "hot", "fan-out", "api")
BASELINE = 10  # configs of the comparison runs
FAN_OUT = 10_000  # configs one fan-out event reaches
CONCURRENCY = "50"  # WEBHOOKS_DISPATCH_CONCURRENCY of every worker
# Seconds between two counts of what a dispatch run delivered: a count of 200,000 deliveries
# took 35 ms, five times a second a sixth of a core of the two measured.
COUNT_INTERVAL = 1.0
CLAIM = "%claim_counted%"  # how pg_stat_statements' text of the claim statement is found
API_BATCH = 1_000  # configs of one createConfigs call (its most)
API_CALLS_AT_ONCE = 4  # createConfigs calls under way at once
CREATE_CONFIGS = """
mutation ($inputs: [CreateConfigInput!]!) { createConfigs(inputs: $inputs) { config { id } } }"""
CONFIG_LIST = """
query ($filter: ConfigFilter, $first: Int, $last: Int) {
  configs(filter: $filter, first: $first, last: $last) {
    edges { node { id name endpoint active health { state } } }
    pageInfo { hasNextPage endCursor }
  }
}"""
CONFIG_COUNT = "query ($filter: ConfigFilter) { configs(filter: $filter, first: 1) { totalCount } }"
API_CALLS = {
    "baseline: { __typename }": ("{ __typename }", {}),  # HTTP, the token check, GraphQL
    "first page": (CONFIG_LIST, {"first": 50}),
    "last page": (CONFIG_LIST, {"last": 50}),
    "search, rare": (CONFIG_LIST, {"first": 50, "filter": {"search": "busy-4242"}}),
    "search, common": (CONFIG_LIST, {"first": 50, "filter": {"search": "127.0.0.1"}}),
    "health OPEN": (CONFIG_LIST, {"first": 50, "filter": {"health": "OPEN"}}),
    "health HEALTHY": (CONFIG_LIST, {"first": 50, "filter": {"health": "HEALTHY"}}),
    "inactive": (CONFIG_LIST, {"first": 50, "filter": {"active": False}}),
    "totalCount": (CONFIG_COUNT, {}),
    "totalCount, search": (CONFIG_COUNT, {"filter": {"search": "idle-77"}}),
}
TARGETS = (
    ("configs created through the API ≥ 1,000/s", "slowest_creation_per_second", ">=", 1000),
    ("dispatch at every size ≥ 0.8 x 10 configs", "worst_dispatch_ratio", ">=", 0.8),
    ("quiet config p99 ≤ 50 ms at every size", "worst_latency_p99_ms", "<=", 50.0),
    ("quiet config p50 within 1.5 x none", "worst_latency_p50_ratio", "<=", 1.5),
    ("four workers on one config ≥ 0.9 x over ten", "hot_ratio", ">=", 0.9),
    ("configs API p99 ≤ 50 ms at the largest size", "api_worst_p99_ms", "<=", 50.0),
)


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine(), "dispatch": {}, "latency": {}}
    parts = set(options.parts)
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        env.statement_stats(pg)
        with env.receiver() as url:
            for workers in options.workers if "dispatch" in parts else ():
                progress(f"dispatch over {BASELINE} configs, {workers} worker(s) ...")
                results["dispatch"][f"{BASELINE}_{workers}"] = _dispatch(
                    pg, url, BASELINE, workers, options, idle=False)
                for size in options.sizes:
                    progress(f"dispatch over {size:,} configs, {workers} worker(s) ...")
                    results["dispatch"][f"{size}_{workers}"] = _dispatch(
                        pg, url, size, workers, options)
            if "latency" in parts:
                progress("latency with no other config ...")
                results["latency"]["0"] = _latency(pg, 0, options)
                for size in options.sizes:
                    progress(f"latency beside {size:,} configs ...")
                    results["latency"][str(size)] = _latency(pg, size, options)
            if "hot" in parts:
                progress("four workers on one config, then over ten ...")
                results["hot"] = {"one": _dispatch(pg, url, 1, 4, options, idle=False),
                                  "ten": _dispatch(pg, url, BASELINE, 4, options, idle=False)}
            if "fan-out" in parts:
                progress(f"fan-out to {options.fan_out:,} configs ...")
                results["fan_out"] = _fan_out(pg, url, options)
        if "api" in parts:
            largest = max(options.sizes)
            progress(f"the configs API at {largest:,} configs ...")
            results["api"] = _api(pg, largest, options)
    results["ratios"] = _ratios(results, options)
    results["targets"] = env.checked_targets(
        [(name, key, comparison, target) for name, key, comparison, target in TARGETS],
        lambda key: results["ratios"].get(key))
    return results


def _populate(dsn: str, url: str, size: int, *, idle: bool, per_busy: int,
              due_in: str = "0 seconds") -> dict:
    """`size` configs at `url`, created through the API: half idle (all busy without `idle`),
    the others with `per_busy` deliveries each, due `due_in` from now. Return the rate of
    creation."""
    idle_count = size // 2 if idle else 0
    with history_api.web(dsn, WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="true") as api:
        token = env.api_token(dsn, "operator", "bench-configs")
        seconds = create_configs(api, token, url, idle_count, event_type="idle",
                                  prefix="idle")
        seconds += create_configs(api, token, url, size - idle_count, event_type="busy",
                                   prefix="busy")
    env.prefill(dsn, per_busy, prefix="busy", event_type="busy", due_in=due_in)
    return {"configs": size, "seconds": round(seconds, 2),
            "per_second": round(size / seconds) if seconds else None}


def create_configs(api: str, token: str, endpoint: str, count: int, *, event_type: str,
                   prefix: str, tenant: str | None = None) -> float:
    """Create `count` configs (named `prefix-1` ...) of `tenant` (a uid; the default tenant
    when None) subscribed to `event_type` at `endpoint` through `createConfigs` at `api`;
    return the seconds it took."""
    inputs = [{"endpoint": endpoint, "eventTypes": [event_type], "name": f"{prefix}-{n}",
               **({"tenant": tenant} if tenant else {})}
              for n in range(1, count + 1)]
    batches = [inputs[start:start + API_BATCH] for start in range(0, count, API_BATCH)]

    def create(batch: list[dict]) -> None:
        response = requests.post(f"{api}/graphql", timeout=600,
                                 headers={"Authorization": f"Bearer {token}"},
                                 json={"query": CREATE_CONFIGS, "variables": {"inputs": batch}})
        if response.status_code != 200 or response.json().get("errors"):
            raise RuntimeError(f"API error: {response.status_code} {response.text[:500]}")

    started = time.perf_counter()
    with ThreadPoolExecutor(API_CALLS_AT_ONCE) as calls:
        list(calls.map(create, batches))
    return time.perf_counter() - started


def _dispatch(pg, url: str, size: int, workers: int, options: argparse.Namespace, *,
              idle: bool = True) -> dict:
    """Deliveries/s of `workers` workers over `size` configs (half idle with `idle`), with
    `options.window` deliveries measured after a warm-up; the claim statement's time."""
    dsn = fresh_database(pg.dsn, f"configs_{size}_{workers}_{int(idle)}")
    sql(dsn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", autocommit=True)
    busy = size - (size // 2 if idle else 0)
    total = options.window + options.warmup
    per_busy = max(options.per_config, -(-total // busy))
    created = _populate(dsn, url, size, idle=idle, per_busy=per_busy)
    sql(dsn, "SELECT pg_stat_statements_reset()")
    with env.workers(dsn, workers, WEBHOOKS_DISPATCH_CONCURRENCY=CONCURRENCY) as processes:
        result = env.rate_between(dsn, DISPATCH_WHERE, total, timeout=options.timeout,
                                  warmup=options.warmup, processes=processes,
                                  interval=COUNT_INTERVAL)
    rows = sql(dsn, "SELECT sum(calls)::bigint, sum(total_exec_time)::float8, sum(rows)::bigint"
                    " FROM pg_stat_statements"
                    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname ="
                    " current_database()) AND query LIKE %s", (CLAIM,))
    calls, milliseconds, claimed = rows[0]
    result.update(configs=size, workers=workers, deliveries_due=busy * per_busy, created=created,
                  claims=int(calls or 0),
                  claim_ms_per_delivery=round(milliseconds / claimed, 4) if claimed else None,
                  claim_ms_per_call=round(milliseconds / calls, 3) if calls else None)
    return result


def _latency(pg, size: int, options: argparse.Namespace) -> dict:
    """A quiet config's publish → arrival delays with `size` other configs present (half
    idle, half with deliveries due an hour from now)."""
    from db import events
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, f"configs_latency_{size}")
    record = Path(tempfile.mkdtemp()) / "delays.jsonl"
    with env.receiver(record=str(record)) as quiet_url, env.receiver() as other_url:
        if size:
            _populate(dsn, other_url, size, idle=True, per_busy=options.per_config,
                      due_in="1 hour")
        with history_api.web(dsn, WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="true") as api:
            create_configs(api, env.api_token(dsn, "operator", "bench-configs"), quiet_url, 1,
                            event_type="quiet", prefix="quiet")
        pool = ConnectionPool(dsn, size=2)
        with env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY=CONCURRENCY):
            events.publish(pool, events.new_event("warm-up", "quiet", {},
                                                  tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20))
            env.wait_for(dsn, DISPATCH_WHERE, 1, timeout=120)
            interval = 1.0 / options.latency_rate
            started = time.monotonic()
            for n in range(options.latency_events):
                delay = started + n * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                events.publish(pool, events.new_event(f"quiet-{n}", "quiet",
                                                      {"sent_at": time.time()},
                                                      tenant_id=DEFAULT_TENANT_ID,
                                                      max_payload=1 << 20))
            env.wait_for(dsn, f"{DISPATCH_WHERE} AND event_type = 'quiet'",
                         options.latency_events + 1, timeout=120)
        pool.close()
    delays = sorted(json.loads(line)["delay"] * 1000 for line in record.read_text().splitlines())
    return {"configs": size, "events": options.latency_events, "received": len(delays),
            "p50_ms": round(_percentile(delays, 50), 2),
            "p99_ms": round(_percentile(delays, 99), 2),
            "max_ms": round(max(delays), 2) if delays else None}


def _fan_out(pg, url: str, options: argparse.Namespace) -> dict:
    """Milliseconds to store one event with its deliveries to `options.fan_out` configs."""
    from db import events
    from db.pool import ConnectionPool

    dsn = fresh_database(pg.dsn, "configs_fan_out")
    with history_api.web(dsn, WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS="true") as api:
        token = env.api_token(dsn, "operator", "bench-configs")
        create_configs(api, token, url, options.fan_out, event_type="everyone", prefix="fan")
        create_configs(api, token, url, options.fan_out, event_type="nobody", prefix="other")
    pool = ConnectionPool(dsn, size=1)
    times = []
    for n in range(options.fan_out_events):
        event = events.new_event(f"fan-{n}", "everyone", {"n": n}, tenant_id=DEFAULT_TENANT_ID,
                                 max_payload=1 << 20)
        started = time.perf_counter()
        published = events.publish(pool, event)
        times.append((time.perf_counter() - started) * 1000)
        assert len(published.delivery_ids) == options.fan_out, published
    pool.close()
    return {"configs": options.fan_out, "events": len(times),
            "p50_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
            "deliveries_per_second": round(options.fan_out * len(times) / (sum(times) / 1000))}


def _api(pg, size: int, options: argparse.Namespace) -> dict:
    """p50/p99 of configs listings over HTTP with `size` configs (some open, some inactive)."""
    dsn = fresh_database(pg.dsn, "configs_api")
    _populate(dsn, "http://127.0.0.1:9/hook", size, idle=True, per_busy=0)
    sql(dsn, "UPDATE config_health SET circuit = 'open', next_probe_at = now() + interval '1 h'"
             " WHERE config_id IN (SELECT id FROM configs ORDER BY random() LIMIT 50)")
    sql(dsn, "UPDATE configs SET active = false"
             " WHERE id IN (SELECT id FROM configs ORDER BY random() LIMIT 20)")
    timings: dict[str, list[float]] = {name: [] for name in API_CALLS}
    with history_api.web(dsn) as url, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {env.api_token(dsn, 'viewer', 'bench-configs')}"

        def post(query: str, variables: dict) -> None:
            response = session.post(f"{url}/graphql", timeout=60,
                                    json={"query": query, "variables": variables})
            if response.status_code != 200 or response.json().get("errors"):
                raise RuntimeError(f"API error: {response.status_code} {response.text}")

        for query, variables in API_CALLS.values():
            post(query, variables)  # warm: pages read, connections open
        for _ in range(options.api_repeat):
            for name, (query, variables) in API_CALLS.items():
                started = time.perf_counter()
                post(query, variables)
                timings[name].append((time.perf_counter() - started) * 1000)
    return {"configs": size, "calls": {
        name: {"p50_ms": round(_percentile(sorted(t), 50), 2),
               "p99_ms": round(_percentile(sorted(t), 99), 2)} for name, t in timings.items()}}


def _ratios(results: dict, options: argparse.Namespace) -> dict:
    dispatch, latency = results["dispatch"], results["latency"]
    ratios: dict = {}
    for key, row in dispatch.items():
        size, workers = key.split("_")
        base = dispatch[f"{BASELINE}_{workers}"]["per_second"]
        if int(size) != BASELINE:
            ratios[f"dispatch_{size}_{workers}_vs_{BASELINE}"] = (
                round(row["per_second"] / base, 3) if base else None)
    created = [row["created"]["per_second"] for key, row in dispatch.items()
               if int(key.split("_")[0]) != BASELINE and row["created"]["per_second"]]
    ratios["slowest_creation_per_second"] = min(created, default=None)
    ratios["worst_dispatch_ratio"] = min(
        (v for k, v in ratios.items() if k.startswith("dispatch_") and v is not None),
        default=None)
    if latency:
        none = latency["0"]
        sized = [latency[str(size)] for size in options.sizes]
        ratios["worst_latency_p99_ms"] = max(r["p99_ms"] for r in sized)
        ratios["worst_latency_p50_ratio"] = (
            round(max(r["p50_ms"] for r in sized) / none["p50_ms"], 3)
            if none["p50_ms"] else None)
    if "hot" in results:
        one, ten = results["hot"]["one"]["per_second"], results["hot"]["ten"]["per_second"]
        ratios["hot_ratio"] = round(one / ten, 3) if ten else None
    if "api" in results:
        ratios["api_worst_p99_ms"] = max(c["p99_ms"] for c in results["api"]["calls"].values())
    return ratios


def table(results: dict) -> str:
    lines = [f"{'dispatch':<28} {'per s':>9} {'ratio':>7} {'claim ms/delivery':>18} "
             f"{'created/s':>10}"]
    for key, row in results["dispatch"].items():
        size, workers = key.split("_")
        ratio = results["ratios"].get(f"dispatch_{size}_{workers}_vs_{BASELINE}", "")
        lines.append(f"{int(size):>9,} configs, {workers} worker(s) {row['per_second']:>9} "
                     f"{ratio!s:>7} {row['claim_ms_per_delivery']!s:>18} "
                     f"{row['created']['per_second']!s:>10}")
    if results["latency"]:
        lines.append(f"\n{'latency (quiet config)':<28} {'p50 ms':>9} {'p99 ms':>9}")
        for size, row in results["latency"].items():
            lines.append(f"{int(size):>9,} other configs {'':<4} {row['p50_ms']:>9} "
                         f"{row['p99_ms']:>9}")
    if "hot" in results:
        hot = results["hot"]
        lines.append(f"\nfour workers: one config {hot['one']['per_second']}/s, ten configs "
                     f"{hot['ten']['per_second']}/s, ratio {results['ratios']['hot_ratio']}")
    if "fan_out" in results:
        fan = results["fan_out"]
        lines.append(f"fan-out to {fan['configs']:,} configs: p50 {fan['p50_ms']} ms, max "
                     f"{fan['max_ms']} ms per event "
                     f"({fan['deliveries_per_second']:,} deliveries/s)")
    if "api" in results:
        lines.append(f"\nconfigs API at {results['api']['configs']:,} configs {'p50 ms':>9} "
                     f"{'p99 ms':>9}")
        for name, row in results["api"]["calls"].items():
            lines.append(f"  {name:<34} {row['p50_ms']:>9} {row['p99_ms']:>9}")
    lines.append("")
    lines.extend(env.target_lines(results["targets"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench configs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=env.numbers(2), default=[1_000, 10_000, 100_000],
                        help="numbers of configs, separated by / (default 1000/10000/100000)")
    parser.add_argument("--workers", type=env.numbers(1), default=[1, 4],
                        help="worker processes of each dispatch run, separated by / "
                             "(default 1/4)")
    parser.add_argument("--parts", type=env.parts(PARTS), default=list(PARTS),
                        help=f"which parts to run, separated by / (default {'/'.join(PARTS)})")
    parser.add_argument("--window", type=int, default=20_000,
                        help="deliveries measured in each dispatch run (default 20000)")
    parser.add_argument("--warmup", type=int, default=2_000,
                        help="deliveries before the clock starts (default 2000)")
    parser.add_argument("--per-config", type=int, default=4,
                        help="deliveries of each busy config, at least (default 4)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a dispatch run may take (default 600)")
    parser.add_argument("--latency-events", type=int, default=500,
                        help="events published to the quiet config (default 500)")
    parser.add_argument("--latency-rate", type=float, default=50.0,
                        help="their rate per second (default 50)")
    parser.add_argument("--fan-out", type=int, default=FAN_OUT,
                        help=f"configs one fan-out event reaches (default {FAN_OUT})")
    parser.add_argument("--fan-out-events", type=int, default=20,
                        help="fan-out events stored (default 20)")
    parser.add_argument("--api-repeat", type=int, default=100,
                        help="timed calls of each API query (default 100)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, short runs: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "configs.json",
                        help="where to write the JSON (default bench/results/configs.json)")
    options = parser.parse_args(argv)
    if options.quick:
        options.sizes, options.workers = [60], [1]
        options.window, options.warmup, options.timeout = 200, 0, 120.0
        options.latency_events, options.latency_rate = 10, 20.0
        options.fan_out, options.fan_out_events, options.api_repeat = 50, 1, 1
        options.fast_unsafe = True

    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

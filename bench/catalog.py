"""`python -m bench catalog`: what the catalog's schemas, wildcard subscriptions and config
filters cost.

In one run, on one PostgreSQL (fsync on), each variant beside its baseline in the same
database, alternated round by round so that the machine's mood falls on both alike:

- publish: single-event publishes as `publishEvent` makes them (catalog check, publish-rate
  slots, ingest; four at once), events/s, of types with a 2 KB JSON Schema each against types
  without one, back to back in each round (target: the median of the rounds' ratios ≥ 0.9),
  and the publishing process's CPU per event;
- wildcards: one event fanned out to 10,000 configs subscribed by a pattern (`w.*`) against
  one fanned out to 10,000 subscribed to its exact type, beside 10,000 configs subscribed to
  neither: milliseconds per event (target ≤ 1.2 x);
- filters: one event fanned out to 1,000 configs of one type, each with a filter of its own
  that lets the event through, against 1,000 without a filter (target ≤ 1.5 x); reported too:
  filters holding a `$regex`, and filters rejecting half of the configs;
- evaluation: microseconds per (event, filter) pair of the service's matcher, against
  PostgreSQL's jsonpath stating the same conditions evaluated in SQL: the measure behind where
  filters run (docs/filters.md).

Configs of the fan-out runs are created as `createConfigs` creates them (db.configs, their
filters checked); the wildcard run's 30,000 are inserted by SQL. Prints progress on stderr,
a table on stdout, and writes the JSON (default bench/results/catalog.json). The test suite
runs it at tiny sizes (--quick).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import environment as env
from db import catalog, configs, event_filter, events
from db.adhoc import fresh_database, sql
from db.configs import NewConfig
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

ENDPOINT = "http://127.0.0.1:9/hook"  # nothing is sent: no worker runs
TYPES = 10  # types of each kind in the publish run
AT_ONCE = 4  # publishes under way at once
CREATED_AT_ONCE = 1_000  # configs of one create_many call (createConfigs' most)
PAYLOAD = {
    "id": "in_1042", "amount": 150, "currency": "EUR", "status": "paid",
    "customer": {"id": "cus_77", "email": "ada@example.com", "country": "FR",
                 "tags": ["eu", "vip"]},
    "lines": [{"sku": f"sku-{n}", "qty": n, "price": 10 * n} for n in range(1, 8)],
    "created": "2026-12-03T10:00:00Z",
}
FILTERS = {
    # name: (event type, the filter of the n-th config); every one lets PAYLOAD through but
    # in "half", where odd configs reject it
    "simple": ("f.paid", lambda n: {"amount": {"$gte": n % 100},
                                    "currency": {"$in": ["EUR", "USD", f"X{n}"]}}),
    "regex": ("r.paid", lambda n: {"amount": {"$gte": n % 100},
                                   "customer.email": {"$regex": rf"@example\.(com|org)$|^{n}-"}}),
    "half": ("h.paid", lambda n: {"amount": {"$gte": 100 + (n % 2) * 100}}),
}
JSONPATHS = {  # the same conditions as FILTERS, in PostgreSQL's jsonpath
    "simple": lambda n: (f'$.amount >= {n % 100} && ($.currency == "EUR" || '
                         f'$.currency == "USD" || $.currency == "X{n}")'),
    "regex": lambda n: (f'$.amount >= {n % 100} && $.customer.email like_regex '
                        f'"@example\\\\.(com|org)$|^{n}-"'),
    "half": lambda n: f"$.amount >= {100 + (n % 2) * 100}",
}


def schema_of_about_2kb() -> dict:
    """Return a JSON Schema (draft 2020-12) of about 2 KB that PAYLOAD satisfies."""
    line = {"type": "object", "required": ["sku", "qty", "price"],
            "properties": {"sku": {"type": "string", "pattern": "^sku-[0-9]+$"},
                           "qty": {"type": "integer", "minimum": 1, "maximum": 1000},
                           "price": {"type": "number", "minimum": 0}}}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id", "amount", "currency", "status", "customer", "lines"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^in_[0-9]+$", "maxLength": 64},
            "amount": {"type": "integer", "minimum": 0, "maximum": 100_000_000},
            "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
            "status": {"type": "string", "enum": ["open", "paid", "void", "uncollectible"]},
            "customer": {"type": "object", "required": ["id", "email"],
                         "properties": {
                             "id": {"type": "string", "pattern": "^cus_[0-9]+$"},
                             "email": {"type": "string", "format": "email", "maxLength": 254},
                             "country": {"type": "string", "minLength": 2, "maxLength": 2},
                             "tags": {"type": "array", "items": {"type": "string"},
                                      "uniqueItems": True, "maxItems": 20}}},
            "lines": {"type": "array", "minItems": 1, "maxItems": 500, "items": line},
            "created": {"type": "string", "format": "date-time"},
        },
    }
    described = 0
    while len(json.dumps(schema)) < 2000:  # descriptions, as a real catalog has them
        schema["properties"]["id"].setdefault("description", "")
        schema["properties"]["id"]["description"] += f"An invoice id ({described}). "
        described += 1
    return schema


def _pool(dsn: str, size: int = 1) -> ConnectionPool:
    return ConnectionPool(dsn, size=size)


def _publish_rate(pool: ConnectionPool, types: list[str], count: int,
                  tag: str) -> tuple[float, float]:
    """Publish `count` events (AT_ONCE at a time, over `types`); return events/s and the
    publishing process's CPU milliseconds per event (what the service itself spends, whatever
    else the machine runs)."""
    def one(n: int) -> None:
        event = events.new_event(f"{tag}-{n}", types[n % len(types)], PAYLOAD,
                                 tenant_id=DEFAULT_TENANT_ID, max_payload=1 << 20)
        events.publish(pool, event)

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(AT_ONCE) as running:
        list(running.map(one, range(count)))
    return (count / (time.perf_counter() - started),
            (time.process_time() - cpu) * 1000 / count)


def publish(pg, options: argparse.Namespace, progress) -> dict:
    dsn = fresh_database(pg.dsn, "catalog_publish")
    pool = _pool(dsn, AT_ONCE)
    schema = schema_of_about_2kb()
    kinds = {"schema": [f"s.t{n}" for n in range(TYPES)],
             "none": [f"p.t{n}" for n in range(TYPES)]}
    for name in kinds["schema"]:
        catalog.create(pool, name=name, schema=schema, examples=[PAYLOAD])
    for name in kinds["none"]:
        catalog.create(pool, name=name, examples=[PAYLOAD])
    for types in kinds.values():
        configs.create_many(pool, [NewConfig(DEFAULT_TENANT_ID, ENDPOINT, [name])
                                   for name in types])
    rates: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    for kind, types in kinds.items():  # warm: schemas compiled, statements planned
        _publish_rate(pool, types, max(20, options.publishes // 10), f"warm-{kind}")
    for round_ in range(options.rounds):
        for kind, types in (kinds.items() if round_ % 2 == 0 else reversed(kinds.items())):
            rate, cpu_ms = _publish_rate(pool, types, options.publishes, f"{kind}-{round_}")
            rates[kind].append(rate)
            cpu[kind].append(cpu_ms)
        progress(f"  publish round {round_ + 1}: " + ", ".join(
            f"{kind} {values[-1]:,.0f}/s" for kind, values in rates.items()))
    pool.close()
    median = {kind: statistics.median(values) for kind, values in rates.items()}
    return {"schema_bytes": len(json.dumps(schema)), "payload_bytes": len(json.dumps(PAYLOAD)),
            "events_per_round": options.publishes, "rounds": options.rounds,
            "events_per_second_schema": round(median["schema"], 1),
            "events_per_second_none": round(median["none"], 1),
            "cpu_ms_per_event": {kind: round(statistics.median(values), 3)
                                 for kind, values in cpu.items()},
            "all_rounds": {kind: [round(v, 1) for v in values] for kind, values in rates.items()},
            "ratio_of_medians": round(median["schema"] / median["none"], 3),
            # each round's two runs ran back to back: their ratio is spared the drift of
            # whatever else the machine does between rounds
            "ratio": round(statistics.median(
                schema / none for schema, none in zip(rates["schema"], rates["none"],
                                                      strict=True)), 3)}


def _fan_out_ms(pool: ConnectionPool, type: str, tag: str, expected: int) -> float:
    event = events.new_event(tag, type, PAYLOAD, tenant_id=DEFAULT_TENANT_ID,
                             max_payload=1 << 20)
    started = time.perf_counter()
    published = events.publish(pool, event)
    elapsed = (time.perf_counter() - started) * 1000
    if len(published.delivery_ids) != expected:
        raise RuntimeError(f"{type}: {len(published.delivery_ids)} deliveries, not {expected}")
    return elapsed


def _alternate(pool: ConnectionPool, runs: dict[str, tuple[str, int]], events_each: int,
               tag: str) -> dict[str, list[float]]:
    """Fan one event out per run (type, deliveries expected), round after round (one warm-up
    round first); return each run's milliseconds."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(events_each + 1):
        order = list(runs.items()) if round_ % 2 == 0 else list(reversed(runs.items()))
        for name, (type, expected) in order:
            elapsed = _fan_out_ms(pool, type, f"{tag}-{name}-{round_}", expected)
            if round_:
                times[name].append(elapsed)
    return times


def _summary(times: list[float], deliveries: int) -> dict:
    p50 = statistics.median(times)
    return {"p50_ms": round(p50, 1), "max_ms": round(max(times), 1), "events": len(times),
            "deliveries_per_event": deliveries,
            "deliveries_per_second": round(deliveries / (p50 / 1000))}


def wildcards(pg, options: argparse.Namespace, progress) -> dict:
    dsn = fresh_database(pg.dsn, "catalog_wildcards")
    n = options.wildcard_configs
    for prefix, subscription in (("wild", "w.*"), ("exact", "e.paid"), ("other", "n.other")):
        env.add_configs(dsn, ENDPOINT, n, event_type=subscription, prefix=prefix)
    sql(dsn, "ANALYZE configs, config_health", autocommit=True)
    progress(f"  {3 * n:,} configs ...")
    pool = _pool(dsn)
    times = _alternate(pool, {"wildcard": ("w.paid", n), "exact": ("e.paid", n)},
                       options.fan_out_events, "wild")
    pool.close()
    wild, exact = _summary(times["wildcard"], n), _summary(times["exact"], n)
    return {"configs": n, "wildcard": wild, "exact": exact,
            "ratio": round(wild["p50_ms"] / exact["p50_ms"], 3)}


def filters(pg, options: argparse.Namespace, progress) -> dict:
    dsn = fresh_database(pg.dsn, "catalog_filters")
    pool = _pool(dsn)
    n = options.filtered_configs
    made = [NewConfig(DEFAULT_TENANT_ID, ENDPOINT, [type], filter=make(k))
            for type, make in FILTERS.values() for k in range(n)]
    made += [NewConfig(DEFAULT_TENANT_ID, ENDPOINT, ["u.paid"]) for _ in range(n)]
    for start in range(0, len(made), CREATED_AT_ONCE):
        configs.create_many(pool, made[start:start + CREATED_AT_ONCE])
    sql(dsn, "ANALYZE configs, config_health", autocommit=True)
    progress(f"  {len(made):,} configs ...")
    runs = {name: (type, n // 2 if name == "half" else n) for name, (type, _) in FILTERS.items()}
    times = _alternate(pool, {"unfiltered": ("u.paid", n), **runs}, options.fan_out_events,
                       "filter")
    pool.close()
    found = {name: _summary(values, runs.get(name, ("", n))[1])
             for name, values in times.items()}
    base = found["unfiltered"]["p50_ms"]
    return {"configs": n, **found,
            "ratios": {name: round(found[name]["p50_ms"] / base, 3) for name in FILTERS}}


def evaluation(pg, options: argparse.Namespace) -> dict:
    """Microseconds per (event, filter) pair: the service's matcher, and jsonpath in SQL (the
    statement's time with the test less its time without, on one connection)."""
    n = options.filtered_configs
    pool = _pool(fresh_database(pg.dsn, "catalog_evaluation"))
    found: dict[str, Any] = {}
    text = json.dumps(PAYLOAD)
    for name, (_, make) in FILTERS.items():
        checked = [event_filter.check(make(k)) for k in range(n)]
        best = float("inf")
        for _ in range(options.evaluation_rounds):
            started = time.perf_counter()
            payload = json.loads(text)
            for one in checked:
                one.matches(payload)
            best = min(best, time.perf_counter() - started)
        with pool.transaction() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE bench_paths (path jsonpath)")
            cursor.execute("INSERT INTO bench_paths SELECT unnest(%s::jsonpath[])",
                           ([JSONPATHS[name](k) for k in range(n)],))
            timed = {"with": float("inf"), "without": float("inf")}
            for _ in range(options.evaluation_rounds):
                for kind, test in (("with", "d.doc @@ path"), ("without", "true")):
                    started = time.perf_counter()
                    cursor.execute("SELECT count(*) FROM bench_paths, "
                                   f"(SELECT %s::jsonb AS doc) d WHERE {test}", (text,))
                    cursor.fetchone()
                    timed[kind] = min(timed[kind], time.perf_counter() - started)
            cursor.execute("DROP TABLE bench_paths")
        in_sql = max(timed["with"] - timed["without"], 0.0)
        found[name] = {"python_us_per_pair": round(best / n * 1e6, 2),
                       "jsonpath_us_per_pair": round(in_sql / n * 1e6, 2)}
    pool.close()
    return found


TARGETS = (
    ("publish with a 2 KB schema ≥ 0.9 x none", ("publish", "ratio"), ">=", 0.9),
    ("fan-out to wildcard subscriptions ≤ 1.2 x exact", ("wildcards", "ratio"), "<=", 1.2),
    ("fan-out to filtered configs ≤ 1.5 x unfiltered", ("filters", "ratios", "simple"), "<=",
     1.5),
)


def _value(results: dict, place: tuple[str, ...]) -> Any:
    for key in place:
        results = results.get(key, {}) if isinstance(results, dict) else {}
    return results if isinstance(results, int | float) else None


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine()}
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        for part, measure in (("publish", publish), ("wildcards", wildcards),
                              ("filters", filters)):
            if part in options.parts:
                progress(f"{part} ...")
                results[part] = measure(pg, options, progress)
        if "evaluation" in options.parts:
            progress("evaluation ...")
            results["evaluation"] = evaluation(pg, options)
    results["targets"] = env.checked_targets(TARGETS, lambda place: _value(results, place))
    return results


def table(results: dict) -> str:
    lines = []
    if "publish" in results:
        p = results["publish"]
        lines += [f"publish ({p['schema_bytes']:,} B schema, {p['payload_bytes']:,} B payload, "
                  f"{AT_ONCE} at once, {p['rounds']} rounds)",
                  f"  with schemas   {p['events_per_second_schema']:>10,.1f} events/s  "
                  f"{p['cpu_ms_per_event']['schema']} ms CPU/event",
                  f"  without        {p['events_per_second_none']:>10,.1f} events/s  "
                  f"{p['cpu_ms_per_event']['none']} ms CPU/event",
                  f"  ratio          {p['ratio']:>10} (median of the rounds' ratios; "
                  f"of the median rates {p['ratio_of_medians']})"]
    if "wildcards" in results:
        w = results["wildcards"]
        lines += [f"fan-out to {w['configs']:,} configs (p50 of {w['exact']['events']} events)",
                  f"  wildcard (w.*) {w['wildcard']['p50_ms']:>10} ms",
                  f"  exact          {w['exact']['p50_ms']:>10} ms",
                  f"  ratio          {w['ratio']:>10}"]
    if "filters" in results:
        f = results["filters"]
        lines.append(f"fan-out to {f['configs']:,} configs of one type (p50 of "
                     f"{f['unfiltered']['events']} events)")
        for name in ("unfiltered", *FILTERS):
            ratio = f["ratios"].get(name, 1.0)
            lines.append(f"  {name:<13}{f[name]['p50_ms']:>10} ms  "
                         f"{f[name]['deliveries_per_event']:>6} deliveries  x{ratio}")
    if "evaluation" in results:
        lines.append("evaluation, µs per (event, filter) pair: service / jsonpath in SQL")
        for name, values in results["evaluation"].items():
            lines.append(f"  {name:<13}{values['python_us_per_pair']:>8} / "
                         f"{values['jsonpath_us_per_pair']}")
    for target in results["targets"]:
        lines.append(f"{'met   ' if target['met'] else 'MISSED'} {target['target']}: "
                     f"{target['value']}")
    return "\n".join(lines)


PARTS = ("publish", "wildcards", "filters", "evaluation")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench catalog", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="*", default=list(PARTS),
                        help=f"any of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--publishes", type=int, default=1_000,
                        help="events published in each round of each kind (default 1000)")
    parser.add_argument("--rounds", type=int, default=7,
                        help="rounds of the publish run (default 7)")
    parser.add_argument("--wildcard-configs", type=int, default=10_000,
                        help="configs of each kind in the wildcard run (default 10000)")
    parser.add_argument("--filtered-configs", type=int, default=1_000,
                        help="configs of each kind in the filter run (default 1000)")
    parser.add_argument("--fan-out-events", type=int, default=10,
                        help="events timed of each kind in the fan-out runs (default 10)")
    parser.add_argument("--evaluation-rounds", type=int, default=20,
                        help="rounds of the evaluation measure, the best kept (default 20)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "catalog.json",
                        help="where to write the JSON (default bench/results/catalog.json)")
    options = parser.parse_args(argv)
    unknown = set(options.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    if options.quick:
        options.publishes, options.rounds, options.fan_out_events = 40, 1, 2
        options.wildcard_configs, options.filtered_configs = 50, 20
        options.evaluation_rounds, options.fast_unsafe = 2, True
    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

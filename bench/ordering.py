"""`python -m bench ordering`: what ordered delivery costs.

In one run, one worker, one receiver, durable PostgreSQL:

- ordered dispatch: one config with `ordering: PER_KEY`, its deliveries spread over 1,000
  keys, against the same deliveries to an unordered config (target ≥ 0.8), and over 10 keys
  (reported: a key's deliveries go one at a time, so ten keys are ten at once at most);
- a blocked key: the same 1,000-key run with one key held by a failed delivery and a backlog
  of its own waiting behind it, against none held: what a held key costs the others.

Prints progress on stderr, a table on stdout, and writes the JSON (default
bench/results/ordering.json). The test suite runs it at tiny sizes (--quick).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import environment as env
from bench.scenarios import DISPATCH_WHERE
from db.adhoc import fresh_database, sql
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

CONCURRENCY = "50"  # WEBHOOKS_DISPATCH_CONCURRENCY of the worker


def _fill(dsn: str, url: str, *, deliveries: int, keys: int, ordered: bool,
          held_key_backlog: int = 0) -> None:
    """One config at `url` (ordered or not) and `deliveries` events over `keys` keys, their
    deliveries numbered per key by the database as ingestion would; with `held_key_backlog`,
    one more key whose first delivery failed and holds that many behind it."""
    sql(dsn, "INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types, ordering) "
             "VALUES (1, 'bench', 'bench', %s, %s, ARRAY['bench.ordered'], %s)",
        (url, env.SECRET, "per_key" if ordered else "unordered"))
    sql(dsn, "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source, ordering_key) "
             "SELECT 1, 'evt-' || g, 'bench.ordered', json_build_object('n', g), now(), 'api', "
             "'key-' || (g %% %s) FROM generate_series(1, %s) g", (keys, deliveries))
    sql(dsn, "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, next_attempt_at, "
             "ordering_key) SELECT 1, e.id, 'bench', e.type, now(), e.ordering_key FROM events e "
             "ORDER BY substr(e.id, 5)::integer")
    if held_key_backlog:
        sql(dsn, "INSERT INTO events (tenant_id, id, type, payload, occurred_at, source, "
                 "ordering_key) "
                 "SELECT 1, 'held-' || g, 'bench.ordered', '{}', now(), 'api', 'held' "
                 "FROM generate_series(1, %s) g", (held_key_backlog + 1,))
        sql(dsn, "INSERT INTO deliveries (tenant_id, event_id, config_id, event_type, "
                 "next_attempt_at, "
                 "ordering_key) SELECT 1, e.id, 'bench', e.type, now(), 'held' FROM events e "
                 "WHERE e.id LIKE 'held-%%' ORDER BY substr(e.id, 6)::integer")
        sql(dsn, "UPDATE deliveries SET status = 'failed', next_attempt_at = NULL "
                 "WHERE event_id = 'held-1'")
    sql(dsn, "VACUUM ANALYZE deliveries", autocommit=True)


def _dispatch(pg, url: str, name: str, options: argparse.Namespace, **fill) -> dict:
    dsn = fresh_database(pg.dsn, f"ordering_{name}")
    _fill(dsn, url, deliveries=options.deliveries + options.warmup, **fill)
    with env.workers(dsn, 1, WEBHOOKS_DISPATCH_CONCURRENCY=CONCURRENCY) as processes:
        result = env.rate_between(dsn, DISPATCH_WHERE, options.deliveries + options.warmup,
                                  timeout=options.timeout, warmup=options.warmup,
                                  processes=processes)
    if fill.get("held_key_backlog"):
        held = sql(dsn, "SELECT count(*) FROM deliveries WHERE ordering_key = 'held' "
                        "AND status = 'pending' AND next_attempt_at IS NULL")[0][0]
        result["held_key_still_waiting"] = held
    return result


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": {k: str(v) for k, v in vars(options).items()},
                     "machine": machine()}
    runs = {
        "unordered": {"keys": options.keys, "ordered": False},
        "ordered": {"keys": options.keys, "ordered": True},
        "ordered_10_keys": {"keys": 10, "ordered": True},
        "ordered_one_held": {"keys": options.keys, "ordered": True,
                             "held_key_backlog": options.held_backlog},
    }
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg, env.receiver() as url:
        for name, fill in runs.items():
            progress(f"{name} ...")
            results[name] = _dispatch(pg, url, name, options, **fill)
    rate = {name: results[name]["per_second"] for name in runs}
    results["ratios"] = {
        "ordered_vs_unordered": round(rate["ordered"] / rate["unordered"], 3),
        "ordered_10_keys_vs_unordered": round(rate["ordered_10_keys"] / rate["unordered"], 3),
        "one_held_vs_none": round(rate["ordered_one_held"] / rate["ordered"], 3),
    }
    results["targets"] = env.checked_targets(
        [("ordered (1,000 keys) ≥ 0.8 x unordered", "ordered_vs_unordered", ">=", 0.8)],
        lambda key: results["ratios"].get(key))
    return results


def table(results: dict) -> str:
    lines = [f"{'run':<22} {'deliveries/s':>13}  cpu ms/delivery"]
    for name in ("unordered", "ordered", "ordered_10_keys", "ordered_one_held"):
        row = results[name]
        lines.append(f"{name:<22} {row['per_second']:>13}  {row.get('cpu_ms_per_delivery')}")
    lines.append("")
    for name, value in results["ratios"].items():
        lines.append(f"{name}: {value}")
    held = results["ordered_one_held"].get("held_key_still_waiting")
    lines.append(f"the held key's backlog still waiting at the end: {held}")
    lines.extend(env.target_lines(results["targets"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench ordering", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=20_000,
                        help="deliveries timed in each run (default 20000)")
    parser.add_argument("--warmup", type=int, default=2_000,
                        help="deliveries before the clock starts (default 2000)")
    parser.add_argument("--keys", type=int, default=1_000,
                        help="ordering keys of the main runs (default 1000)")
    parser.add_argument("--held-backlog", type=int, default=5_000,
                        help="deliveries waiting behind the held key (default 5000)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a run may take (default 600)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (a smoke test, not a measure)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: a smoke test, not a measure")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "ordering.json",
                        help="where to write the JSON (default bench/results/ordering.json)")
    options = parser.parse_args(argv)
    if min(options.deliveries, options.keys) < 1 or options.warmup < 0:
        parser.error("--deliveries and --keys must be 1 or more, --warmup 0 or more")
    if options.quick:
        options.deliveries, options.warmup, options.keys = 300, 0, 30
        options.held_backlog, options.timeout, options.fast_unsafe = 50, 120.0, True

    results = run(options, env.progress)
    return env.report(results, table(results), options.output)

"""Run the benchmarks side by side: `python -m bench [SCENARIO ...] [--quick]`.

Starts everything on 127.0.0.1 (embedded PostgreSQL with fsync on, a receiver process,
worker processes), runs each scenario for a bounded time, prints a table and writes JSON to
bench/results/ (--results to change it). Scenarios: dispatch, ceiling, peers, polling,
ingest, latency, backlog, isolation (bench/isolation.py: one bad endpoint beside good ones),
pooler (dispatch and latency through PgBouncer in transaction mode, Debian's package);
peers needs the bench extra (pip install -e '.[dev,bench]'), the others what dev installs.
`python -m bench history --help`: the history-at-scale run, with its own flags;
`python -m bench configs --help`: the many-configs run, with its own flags;
`python -m bench ordering --help`: what ordered delivery costs, with its own flags.
`python -m bench live-page --help`: what one open dashboard page costs, live, with its own
flags.
`python -m bench catalog --help`: what schemas, wildcard subscriptions and config filters
cost, with its own flags.
`python -m bench announcements --help`: what operational events cost the record, and the
relay's rate, with its own flags.
`python -m bench tenant-upgrade --help`: how long the upgrade to tenants holds up dispatch,
publishes and reads, table by table, with its own flags.
`python -m bench tenants --help`: what 100,000 tenants cost, with its own flags.
`python -m bench tenant-fairness --help`: a quiet tenant beside one with a thousand backlogged
configs, with its own flags.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, replace  # noqa: E402
from pathlib import Path  # noqa: E402

from bench import environment as env  # noqa: E402
from bench import peers, scenarios  # noqa: E402
from service.local.pgbouncer import LocalPgBouncer  # noqa: E402
from service.local.postgres import temporary_postgres  # noqa: E402
from service.local.processes import machine  # noqa: E402

ALL = ("ceiling", "dispatch", "peers", "polling", "ingest", "latency", "backlog", "isolation",
       "pooler")
RESULTS = Path(__file__).with_name("results")
EXIT_USAGE = 2  # as every command of the project: bad usage, or something to install


def run(names: list[str], sizes: scenarios.Sizes, progress) -> dict:
    results: dict = {"machine": machine(), "sizes": asdict(sizes), "scenarios": {}}
    out = results["scenarios"]
    with temporary_postgres(fast_unsafe=False) as pg:
        for name in names:
            progress(f"running {name} ...")
            started = time.monotonic()
            if name == "ceiling":
                out["ceiling"] = scenarios.ceiling(sizes, mode="session")
                out["ceiling_sender"] = scenarios.ceiling(sizes, mode="sender")
            elif name == "dispatch":
                for workers in sizes.dispatch_workers:
                    out[f"dispatch_{workers}"] = scenarios.dispatch(pg, sizes, workers=workers)
            elif name == "peers":
                out.update(peers.run(pg, sizes))
            elif name == "polling":
                out["polling"] = scenarios.polling_design(pg, sizes)
            elif name == "ingest":
                from bench import ingest
                out.update(ingest.scenario(sizes))
            elif name == "latency":
                out["latency"] = scenarios.latency(pg, sizes)
            elif name == "backlog":
                out["backlog"] = scenarios.backlog(pg, sizes)
            elif name == "isolation":
                from bench import isolation
                out["isolation_hung"] = isolation.fast_beside_hung(pg, sizes)
                for backlog in sizes.slow_backlogs:
                    out[f"isolation_slow_{backlog}"] = isolation.quiet_behind_slow(
                        pg, sizes, backlog=backlog)
                out["isolation_claim"] = isolation.claim_behind_held(
                    pg, held=sizes.backlog // 10)
            elif name == "pooler":
                out.update(pooler(pg, sizes))
            progress(f"  {name} done in {time.monotonic() - started:.0f}s")
    results["ratios"] = ratios(out)
    results["targets"] = targets(out, results["ratios"])
    return results


def pooler(pg, sizes: scenarios.Sizes) -> dict:
    """Dispatch and latency through PgBouncer in transaction mode against the same database
    reached directly, side by side in one run."""
    with LocalPgBouncer(pg.dsn) as bouncer:
        return {
            "pooler_dispatch_direct": scenarios.dispatch(pg, sizes, name="pooler_direct"),
            "pooler_dispatch_pooled": scenarios.dispatch(pg, sizes, pooler=bouncer,
                                                         name="pooler_pooled"),
            "pooler_latency_direct": scenarios.latency(pg, sizes, name="latency_direct"),
            "pooler_latency_pooled": scenarios.latency(pg, sizes, pooler=bouncer,
                                                       name="latency_pooled"),
            "pooler_latency_pooled_direct_url": scenarios.latency(
                pg, sizes, pooler=bouncer, direct_url=True, name="latency_direct_url"),
        }


def ratios(out: dict) -> dict:
    """Return the comparisons the targets are stated in, where both sides were measured."""
    def rate(key):
        return out.get(key, {}).get("per_second")

    pairs = {
        "dispatch_vs_ceiling": ("dispatch_1", "ceiling"),
        "dispatch_vs_sender_ceiling": ("dispatch_1", "ceiling_sender"),
        "dispatch_vs_celery": ("dispatch_1", "celery"),
        "dispatch_vs_procrastinate": ("dispatch_1", "procrastinate"),
        "dispatch_vs_polling": ("dispatch_1", "polling"),
        "backlog_vs_dispatch": ("backlog", "dispatch_1"),
        "pooled_vs_direct": ("pooler_dispatch_pooled", "pooler_dispatch_direct"),
    }
    found = {}
    for name, (top, bottom) in pairs.items():
        if rate(top) and rate(bottom):
            found[name] = round(rate(top) / rate(bottom), 3)
    return found


# (name, where the number is, comparison, target): the targets for a 2-core machine.
TARGETS = (
    ("dispatch ≥ 0.8 x raw ceiling", ("ratios", "dispatch_vs_ceiling"), ">=", 0.8),
    ("dispatch ≥ 2.5 x Celery", ("ratios", "dispatch_vs_celery"), ">=", 2.5),
    ("dispatch ≥ 3 x procrastinate", ("ratios", "dispatch_vs_procrastinate"), ">=", 3.0),
    ("dispatch ≥ 60 x polling design", ("ratios", "dispatch_vs_polling"), ">=", 60.0),
    ("ingest ≥ 10,000 events/s at fan-out 1", ("ingest_fan_out_1", "per_second"), ">=", 10_000),
    ("latency p99 ≤ 50 ms", ("latency", "p99_ms"), "<=", 50.0),
    ("fast endpoints beside a hung one ≥ 0.8 x alone", ("isolation_hung", "ratio"), ">=", 0.8),
    ("quiet config behind 1,500 slow ≤ 1 s", ("isolation_slow_1500", "max_ms"), "<=", 1000.0),
    ("quiet config behind 100,000 slow ≤ 1 s", ("isolation_slow_100000", "max_ms"), "<=",
     1000.0),
    ("backlog ≥ 0.8 x dispatch", ("ratios", "backlog_vs_dispatch"), ">=", 0.8),
    ("dispatch through a pooler ≥ 0.8 x direct", ("ratios", "pooled_vs_direct"), ">=", 0.8),
    ("worker peak RSS ≤ 200 MB (dispatch)", ("dispatch_1", "peak_rss_mb"), "<=", 200.0),
    ("consumer peak RSS ≤ 200 MB (ingest)", ("ingest_fan_out_1", "peak_rss_mb"), "<=", 200.0),
)


def targets(out: dict, found_ratios: dict) -> list[dict]:
    """Return each target that was measured in this run, with its value and whether it is met."""
    return env.checked_targets(TARGETS, lambda place: (
        found_ratios if place[0] == "ratios" else out.get(place[0], {})).get(place[1]))


def table(results: dict) -> str:
    lines = [f"{'scenario':<22} {'result':>14}  details", "-" * 78]
    for name, values in results["scenarios"].items():
        if "per_second" in values:
            main = f"{values['per_second']:,.1f}/s"
        elif "p99_ms" in values:
            main = f"p99 {values['p99_ms']} ms"
        else:
            main = ""
        details = ", ".join(f"{k}={v}" for k, v in values.items()
                            if k not in ("per_second",))
        lines.append(f"{name:<22} {main:>14}  {details}")
    lines.append("-" * 78)
    for name, value in results["ratios"].items():
        lines.append(f"{name:<36} {value:>8.3f}")
    if results.get("targets"):
        lines.append("-" * 78)
    for check in results.get("targets", ()):
        verdict = "met" if check["met"] else "MISSED"
        lines.append(f"{check['target']:<40} {check['value']:>12,.3f}  {verdict}")
    return "\n".join(lines)


def main() -> int:
    if sys.argv[1:2] == ["history"]:
        from bench import history
        return history.main(sys.argv[2:])
    if sys.argv[1:2] == ["configs"]:
        from bench import configs
        return configs.main(sys.argv[2:])
    if sys.argv[1:2] == ["ordering"]:
        from bench import ordering
        return ordering.main(sys.argv[2:])
    if sys.argv[1:2] == ["tenant-upgrade"]:
        from bench import tenant_upgrade
        return tenant_upgrade.main(sys.argv[2:])
    if sys.argv[1:2] == ["announcements"]:
        from bench import announcements
        return announcements.main(sys.argv[2:])
    if sys.argv[1:2] == ["tenants"]:
        from bench import tenants
        return tenants.main(sys.argv[2:])
    if sys.argv[1:2] == ["live-page"]:
        from bench import live_page
        return live_page.main(sys.argv[2:])
    if sys.argv[1:2] == ["catalog"]:
        from bench import catalog
        return catalog.main(sys.argv[2:])
    if sys.argv[1:2] == ["tenant-fairness"]:
        from bench import tenant_fairness
        return tenant_fairness.main(sys.argv[2:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", default=["all"],
                        help=f"any of {', '.join(ALL)} (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, short waits: a smoke test, not a measure")
    parser.add_argument("--seconds", type=float, help="length of timed scenarios")
    parser.add_argument("--deliveries", type=int, help="pre-filled backlog for dispatch")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="folder for the JSON: a timestamped file and latest.json "
                             "(default: bench/results)")
    args = parser.parse_args()
    names = list(ALL) if "all" in args.scenarios else args.scenarios
    unknown = set(names) - set(ALL)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    if "peers" in names and (missing := peers.missing_packages()):
        print(f"python -m bench: the peers scenario needs {', '.join(missing)} (the bench "
              f"extra): {peers.INSTALL}", file=sys.stderr)
        return EXIT_USAGE
    sizes = scenarios.QUICK if args.quick else scenarios.Sizes()
    if args.seconds:
        sizes = replace(sizes, seconds=args.seconds)
    if args.deliveries:
        sizes = replace(sizes, deliveries=args.deliveries)

    def progress(text):
        print(text, file=sys.stderr, flush=True)

    results = run(names, sizes, progress)
    print(table(results))
    args.results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for path in (args.results / f"{stamp}.json", args.results / "latest.json"):
        path.write_text(json.dumps(results, indent=2))
    progress(f"results written to {args.results / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

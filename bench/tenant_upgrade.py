"""`python -m bench tenant-upgrade`: how long the upgrade to tenants holds up the service.

Builds a database as the release before tenants left it (migrations up to PRE_TENANTS),
fills it with a history of DELIVERIES deliveries with their events and attempts
(bench/history_fill.py: every status, 31 days of them), a few thousand idempotency keys and
two API tokens; then, on a copy of it for each variant of the migrations (`--variant`; this
tree's by default), runs `migrate` to the end while a load dispatches, records, publishes and
reads (bench/lock_probe.py). Prints, per table, the longest a statement of the load took
before the upgrade and during it, the longest any session waited for a table lock during
it (and for whom), and the longest the upgrade held a lock that blocks writes; then checks
that everything landed in the tenant `default`.

Prints progress on stderr, a table on stdout, and writes the JSON (default
bench/results/tenant_upgrade.json).
"""

from __future__ import annotations

import argparse
import re
import signal
import time
from pathlib import Path

import gevent

from bench import environment as env
from bench import history_fill
from bench.history import tune
from bench.lock_probe import LONG_READ_EVERY, TABLES, Probe
from db.adhoc import create_database, dsn_for, sql
from db.migrate import MIGRATIONS_DIR, migrate
from service.local.postgres import temporary_postgres
from service.local.processes import ROOT, machine

PRE_TENANTS = 27  # the last migration of the release before tenants
MIGRATE = "webhooks-migrate"  # the application_name of the migration's session
TARGET_SECONDS = 1.0  # no statement on deliveries waits longer than this
# What the upgrade must leave: each row of the release before in the tenant `default`.
TENANT_OWNED = ("configs", "events", "deliveries", "delivery_attempts", "config_health",
                "config_attempt_counts", "replay_requests")


def run(options: argparse.Namespace, progress) -> dict:
    results: dict = {"options": vars(options), "machine": machine(), "variants": {}}
    with temporary_postgres(fast_unsafe=options.fast_unsafe) as pg:
        tune(pg)
        filled = create_database(pg.dsn, "tenant_upgrade")
        migrate(filled, up_to=PRE_TENANTS)
        progress(f"a database at migration {PRE_TENANTS}, the release before tenants")
        results["fill"] = history_fill.fill(filled, options.deliveries, progress=progress)
        _add_keys_and_tokens(filled, options.replay_keys)
        results["rows"] = _rows(filled)
        progress("rows: " + ", ".join(f"{t} {n:,}" for t, n in results["rows"].items()))
        for name, directory, lock_timeout in options.variant:
            progress(f"{name} ({directory}): a copy of the filled database ...")
            sql(pg.dsn, f"CREATE DATABASE upgrade_{name} TEMPLATE tenant_upgrade",
                autocommit=True)
            dsn = dsn_for(pg.dsn, f"upgrade_{name}")
            results["variants"][name] = _upgrade(dsn, directory, lock_timeout, options,
                                                 progress)
            sql(pg.dsn, f"DROP DATABASE upgrade_{name} WITH (FORCE)", autocommit=True)
    results["targets"] = env.checked_targets(
        [(f"{name}: no statement on deliveries waits > {TARGET_SECONDS:.0f} s", name, "<=",
          TARGET_SECONDS) for name in results["variants"]],
        lambda name: results["variants"][name]["during"]["lock_waits"]["deliveries"]["seconds"])
    return results


def _upgrade(dsn: str, directory: Path, lock_timeout: str | None,
             options: argparse.Namespace, progress) -> dict:
    """Run the load alone a while, then migrate to the end of `directory` under it."""
    probe = Probe(dsn, holder=MIGRATE, long_read=options.long_read)
    probe.start()
    try:
        gevent.sleep(2.0)  # the load settles
        progress(f"  the load alone for {options.seconds:.0f}s ...")
        before = probe.window(lambda: gevent.sleep(options.seconds))
        progress("  migrating to the end while the load runs ...")
        log: list[str] = []
        started = time.monotonic()

        def report(line: str) -> None:
            log.append(f"{time.monotonic() - started:7.2f}s {line}")
            progress(f"    {log[-1]}")

        during = probe.window(lambda: migrate(
            dsn, report=report, directory=directory, lock_timeout=lock_timeout))
    finally:
        probe.stop()
    result = {"before": before.as_dict(), "during": during.as_dict(), "migration_log": log,
              "tenants_after": _tenants_after(dsn)}
    progress("  longest lock wait: " + ", ".join(
        f"{table} {wait['seconds']:.3f}s" for table, wait in
        result["during"]["lock_waits"].items()))
    return result


def _add_keys_and_tokens(dsn: str, keys: int) -> None:
    """Add what else the release before kept: a day of idempotency keys, two tokens."""
    sql(dsn, "INSERT INTO replay_requests (idempotency_key, request_fingerprint, result,"
             " created_at) SELECT 'key-' || g, md5(g::text), '{\"action\": \"REPLAYED\"}',"
             " now() - (g %% 86400) * interval '1 second' FROM generate_series(1, %s) g", (keys,))
    sql(dsn, "INSERT INTO api_tokens (name, role, token_hash) VALUES"
             " ('ops', 'operator', md5('ops')), ('dashboard', 'viewer', md5('dashboard'))")


def _rows(dsn: str) -> dict[str, int]:
    return {table: sql(dsn, f"SELECT count(*) FROM {table}")[0][0]
            for table in (*TENANT_OWNED, "api_tokens")}


def _tenants_after(dsn: str) -> dict:
    """Count each table's rows by tenant uid after the upgrade (tokens: null, the platform;
    idempotency keys: 0, the platform's own)."""
    found = {}
    for table in TENANT_OWNED:
        found[table] = dict(sql(dsn, "SELECT coalesce(t.uid, 'no tenant: ' || x.tenant_id),"
                                     f" count(*) FROM {table} x LEFT JOIN tenants t"
                                     " ON t.id = x.tenant_id GROUP BY 1"))
    found["api_tokens"] = dict(sql(dsn, "SELECT coalesce(t.uid, '(platform)'), count(*)"
                                        " FROM api_tokens k LEFT JOIN tenants t"
                                        " ON t.id = k.tenant_id GROUP BY 1"))
    return found


def table(results: dict) -> str:
    fill = results["fill"]
    lines = [f"tenant upgrade: {fill['deliveries']:,} deliveries, {fill['attempts']:,} attempts",
             "-" * 100,
             f"{'table':<18} {'variant':<12} {'longest statement, s':>21} {'longest lock':>14}"
             f" {'write-blocking lock':>20}",
             f"{'':<18} {'':<12} {'before':>10} {'during':>10} {'wait, s':>14}"
             f" {'held by it, s':>20}"]
    variants = results["variants"]
    for name in TABLES:
        for variant, seen in variants.items():
            lines.append(
                f"{name:<18} {variant:<12} {seen['before']['statements'][name]['seconds']:>10.3f}"
                f" {seen['during']['statements'][name]['seconds']:>10.3f}"
                f" {seen['during']['lock_waits'][name]['seconds']:>14.3f}"
                f" {seen['during']['write_blocking_locks_held'][name]['seconds']:>20.3f}")
    for variant, seen in variants.items():
        lines.append("-" * 100)
        lines.append(f"{variant}: migrated in {seen['during']['seconds']:,.1f}s")
        for name in TABLES:
            wait = seen["during"]["lock_waits"][name]
            if wait["what"]:
                lines.append(f"  longest wait on {name}: {wait['what'][:300]}")
        waited = seen["during"]["change_waited"]
        if waited["what"]:
            lines.append(f"  the upgrade's own longest wait: {waited['seconds']:.3f}s"
                         f" {waited['what'][:200]}")
        for phase in ("before", "during"):
            counts, seconds = seen[phase]["counts"], seen[phase]["seconds"]
            lines.append(f"  load {phase}: " + ", ".join(
                f"{name} {count / seconds:,.0f}/s" for name, count in sorted(counts.items()))
                + (f"; errors {seen[phase]['errors']}" if seen[phase]["errors"] else ""))
        lines += [f"    {line}" for line in seen["migration_log"]]
        for name, by_tenant in seen["tenants_after"].items():
            lines.append(f"  {name:<24} " + ", ".join(f"{uid}: {count:,}"
                                                      for uid, count in by_tenant.items()))
    lines.append("-" * 100)
    for check in results["targets"]:
        lines.append(f"{check['target']:<60} {check['value']:>8,.3f}"
                     f"  {'met' if check['met'] else 'MISSED'}")
    return "\n".join(lines)


def _variant(text: str) -> tuple[str, Path, str | None]:
    name, _, rest = text.partition("=")
    directory, _, lock_timeout = rest.partition(",")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not Path(directory).is_dir():
        raise argparse.ArgumentTypeError(
            "give NAME=DIR[,LOCK_TIMEOUT]: a name of lower-case letters, digits and _, a"
            " folder, and a PostgreSQL duration such as 5s")
    return name, Path(directory), lock_timeout or None


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tenant-upgrade", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=1_000_000,
                        help="history deliveries to fill (default 1,000,000)")
    parser.add_argument("--replay-keys", type=int, default=10_000,
                        help="idempotency keys of replays kept from the last day")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="how long the load runs alone before the upgrade")
    parser.add_argument("--variant", type=_variant, action="append",
                        help="NAME=DIR[,LOCK_TIMEOUT]: migrate a copy of the filled database"
                             " with the migrations of DIR instead, each lock waited for at most"
                             " LOCK_TIMEOUT (default: migrate's own) (repeatable; side by side,"
                             " in order); default: this tree's, named current")
    parser.add_argument("--long-read", type=float, default=1.5,
                        help="seconds a long reader keeps its lock on deliveries, one every"
                             f" {LONG_READ_EVERY:.0f} s (0: none)")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="fsync off (smoke runs only: the numbers are not durable ones)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" /
                        "tenant_upgrade.json", help="where the JSON goes")
    options = parser.parse_args(argv)
    if options.deliveries < 1000:
        parser.error("--deliveries: at least 1000")
    options.variant = options.variant or [("current", MIGRATIONS_DIR, None)]
    signal.signal(signal.SIGTERM, _interrupt)  # stop PostgreSQL on the way out
    try:
        results = run(options, env.progress)
    except KeyboardInterrupt:
        env.progress("interrupted")
        return 130
    return env.report(results, table(results), options.output)

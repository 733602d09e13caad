"""Prove "nothing lost" under crashes, outages and hostile input: `python -m tests.reliability`.

Scenarios (docs/reliability.md): `crash` SIGKILLs a worker every --kill-every seconds and
starts a new one; `database` kills PostgreSQL mid-run and starts it again on the same port;
`broker` freezes the Kafka broker past the session timeout. Each publishes --events events
to --configs subscribed configs on a receiver that fails --fail-rate of the attempts, waits
until every delivery is terminal, and checks every delivery's history against what the
receiver saw. `hostile` sends --per-kind deliveries to each hostile endpoint (endless body,
10 GB Content-Length, endless headers, invalid HTTP, redirect inside, TLS errors, slow and
hanging answers) and checks each attempt's record, duration and the workers' memory; `ssrf`
sends --ssrf-rounds events to each target of the SSRF catalogue with private endpoints not
allowed: every one blocked, no connection made; `poison` produces --poison-messages
messages, one in five an event and the rest random bytes and malformed envelopes: every
event delivered, every other message quarantined; `secrets` creates and rotates
--secret-configs configs' secrets through `webhooks web`, delivers to endpoints that echo
their signatures back, and looks for every secret and token in the API's output and errors
and in every process's debug log. Without --scenario, all of them run.
Prints a report per scenario and writes JSON to tests/reliability/results/chaos.json; exits
1 when any check failed.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, replace  # noqa: E402
from pathlib import Path  # noqa: E402

from db.adhoc import fresh_database  # noqa: E402
from db.migrate import migrate  # noqa: E402
from service.local.kafka import LocalKafka  # noqa: E402
from service.local.ports import reserve_port  # noqa: E402
from service.local.postgres import temporary_postgres  # noqa: E402
from service.local.processes import machine  # noqa: E402
from tests.reliability import attacks, scenarios  # noqa: E402
from tests.reliability.check import Verdict  # noqa: E402
from tests.reliability.report import report  # noqa: E402
from tests.reliability.run import Options  # noqa: E402
from tests.reliability.secrets import secrets  # noqa: E402

SCENARIOS = ("crash", "database", "broker", "hostile", "ssrf", "poison", "secrets")
RESULTS = Path(__file__).resolve().parent / "results" / "chaos.json"
QUICK = dict(events=600, kill_every=2.0, max_kills=3, session_timeout=2.0, freeze=3.5,
             outage=3.0, rate=300.0, per_kind=5, ssrf_rounds=2, poison_messages=1000,
             secret_configs=10)


def run(name: str, options: Options, workdir: Path, say) -> Verdict:
    """Run one scenario on servers of its own; return its verdict."""
    if name == "crash":
        with temporary_postgres(fast_unsafe=False) as pg:
            return scenarios.crash(fresh_database(pg.dsn, "chaos"), workdir, options, say)
    if name == "database":
        with temporary_postgres(fast_unsafe=False) as server, \
                LocalKafka(port=reserve_port()) as broker:
            migrate(server.dsn)
            return scenarios.database_outage(server, broker, workdir, options, say)
    if name in ("hostile", "ssrf", "secrets"):
        scenario = {"hostile": attacks.hostile, "ssrf": attacks.ssrf, "secrets": secrets}[name]
        with temporary_postgres(fast_unsafe=False) as pg:
            return scenario(fresh_database(pg.dsn, "chaos"), workdir, options, say)
    scenario = scenarios.broker_outage if name == "broker" else scenarios.poison_topic
    with temporary_postgres(fast_unsafe=False) as pg, LocalKafka(port=reserve_port()) as broker:
        return scenario(fresh_database(pg.dsn, "chaos"), broker, workdir, options, say)


def main(argv: list[str] | None = None) -> int:
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m tests.reliability", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    parser.add_argument("--quick", action="store_true",
                        help="600 events, 3 kills, 5 per hostile endpoint, 2 SSRF rounds, "
                             "1,000 poison messages, 10 secret configs: a smoke run")
    for field, help in (("events", "events published"), ("configs", "subscribed configs"),
                        ("fail_rate", "share of attempts the receiver fails"),
                        ("kill_every", "seconds between SIGKILLs"),
                        ("max_kills", "stop killing after this many"),
                        ("workers", "worker processes"),
                        ("concurrency", "WEBHOOKS_DISPATCH_CONCURRENCY"),
                        ("max_attempts", "WEBHOOKS_MAX_ATTEMPTS"),
                        ("claim_timeout", "WEBHOOKS_CLAIM_TIMEOUT, seconds"),
                        ("http_timeout", "WEBHOOKS_HTTP_TIMEOUT, seconds"),
                        ("hostile_timeout", "WEBHOOKS_HTTP_TIMEOUT of the hostile scenario, "
                                            "seconds"),
                        ("rate", "events published per second"), ("seed", "fault schedule"),
                        ("outage", "seconds PostgreSQL stays down"),
                        ("freeze", "seconds the broker stays frozen"),
                        ("session_timeout", "WEBHOOKS_KAFKA_SESSION_TIMEOUT, seconds"),
                        ("per_kind", "deliveries to each hostile endpoint"),
                        ("ssrf_rounds", "events sent to each SSRF target"),
                        ("poison_messages", "messages on the poison topic, one in five an event"),
                        ("secret_configs", "configs whose secrets are looked for everywhere")):
        default = getattr(defaults, field)
        kind = float if isinstance(default, float) else int
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, dest=field,
                            help=f"{help} (default: {default})")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep each run's folder (worker logs, receiver record) even when OK")
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in vars(args).items() if k in asdict(defaults) and v is not None}
    options = replace(defaults, **{**(QUICK if args.quick else {}), **chosen})
    names = SCENARIOS if args.scenario == "all" else (args.scenario,)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    results = {"machine": machine(), "options": asdict(options), "scenarios": {}}
    failed = False
    for name in names:
        workdir = Path(tempfile.mkdtemp(prefix=f"chaos-{name}-"))
        say(f"running {name} (logs in {workdir}) ...")
        started = time.monotonic()
        verdict = run(name, options, workdir, say)
        say(f"  {name} done in {time.monotonic() - started:.0f} s")
        print(report(name, verdict), flush=True)
        results["scenarios"][name] = {"ok": verdict.ok, "counts": verdict.counts,
                                      "problems": verdict.problems,
                                      "problem_counts": dict(verdict.problem_counts)}
        failed |= not verdict.ok
        if verdict.ok and not args.keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, default=str) + "\n")
    say(f"results written to {args.output}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

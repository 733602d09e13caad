"""`webhooks stats`: deliveries by status, the queue, and attempts of the last hours, of the
whole platform or (with --tenant) of one tenant."""

from __future__ import annotations

import argparse

from db.tenants import STATS_BOUND
from db.vocabulary import Status
from service.commands.local_api import (
    LocalApi,
    add_output_flag,
    add_tenant_flag,
    print_json,
    print_table,
    run_command,
)
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import DATABASE_ONLY
from service.policy.durations import format_duration
from service.runtime.settings import Settings

HISTORY = """attemptHistory(hours: $hours, bucketMinutes: 60) {
    complete configs { configId configName attempts succeeded successRate }
  }"""
STATS = f"""query ($hours: Int!) {{
  stats {{ byStatus {{ status count }} queueDepth oldestDueAgeSeconds rejectedEvents }}
  {HISTORY}
}}"""
# A tenant token reads its own counts: the platform's `stats` are not its to read.
TENANT_STATS = f"""query ($hours: Int!, $tenant: String!) {{
  tenant(uid: $tenant) {{
    uid name stats {{ pending delivering succeeded failed cancelled queueDepth
                     oldestDueAgeSeconds attemptsLastHour failureRatioLastHour }}
  }}
  {HISTORY}
}}"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hours", type=int, default=24,
                        help="the window of the per-config attempt counts (default: 24)")
    add_output_flag(parser)
    add_tenant_flag(parser)


@command("stats", "show deliveries by status, queue depth and per-config success rates",
         _arguments, settings=DATABASE_ONLY)
def run_stats(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("stats", settings, lambda api: _stats(api, args), tenant_uid=args.tenant)


def _stats(api: LocalApi, args: argparse.Namespace) -> int:
    if api.platform:
        data = api.run(STATS, {"hours": args.hours})
    else:
        data = api.run(TENANT_STATS, {"hours": args.hours, "tenant": api.tenant_uid})
    if args.json:
        print_json(data)
        return EXIT_OK
    if api.platform:
        _platform_counts(data["stats"])
    else:
        _tenant_counts(data["tenant"])
    history = data["attemptHistory"]
    print(f"\nattempts of the last {args.hours} h by config"
          f"{'' if history['complete'] else ' (newest attempts only: counts too few)'}:")
    print_table(["CONFIG", "ATTEMPTS", "SUCCEEDED", "SUCCESS RATE"],
                [[c["configName"] or c["configId"], c["attempts"], c["succeeded"],
                  f"{c['successRate']:.1%}"] for c in history["configs"]])
    return EXIT_OK


def _platform_counts(stats: dict) -> None:
    for row in stats["byStatus"]:
        print(f"{Status[row['status']]:<12} {row['count']:>10,}")
    print(f"{'queue depth':<12} {stats['queueDepth']:>10,}")
    _oldest(stats["oldestDueAgeSeconds"])
    print(f"rejected broker messages {stats['rejectedEvents']:,}")


def _tenant_counts(tenant: dict) -> None:
    stats = tenant["stats"]
    print(f"tenant {tenant['uid']} ({tenant['name']}); each count stops at {STATS_BOUND:,}")
    for status in Status:
        print(f"{status:<12} {_bounded(stats[status.value])}")
    print(f"{'queue depth':<12} {_bounded(stats['queueDepth'])}")
    _oldest(stats["oldestDueAgeSeconds"])
    ratio = stats["failureRatioLastHour"]
    print(f"attempts in the last hour {stats['attemptsLastHour']:,}"
          f"{'' if ratio is None else f' ({ratio:.1%} failed)'}")


def _oldest(seconds: float | None) -> None:
    waits = "-" if seconds is None else format_duration(seconds, parts=2)
    print(f"oldest sendable delivery waits {waits}")


def _bounded(count: int) -> str:
    """Return a tenant's count, which stops at STATS_BOUND, right-aligned: `10,000+` there."""
    return f"{count:>10,}" if count < STATS_BOUND else f"{STATS_BOUND:>10,}+"

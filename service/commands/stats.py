"""`webhooks stats`: deliveries by status, the queue, and attempts of the last hours."""

from __future__ import annotations

import argparse

from db.vocabulary import Status
from service.commands.local_api import (
    LocalApi,
    add_output_flag,
    print_json,
    print_table,
    run_command,
)
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import DATABASE_ONLY
from service.policy.durations import format_duration
from service.runtime.settings import Settings

STATS = """query ($hours: Int!) {
  stats { byStatus { status count } queueDepth oldestDueAgeSeconds rejectedEvents }
  attemptHistory(hours: $hours, bucketMinutes: 60) {
    complete configs { configId configName attempts succeeded successRate }
  }
}"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hours", type=int, default=24,
                        help="the window of the per-config attempt counts (default: 24)")
    add_output_flag(parser)


@command("stats", "show deliveries by status, queue depth and per-config success rates",
         _arguments, settings=DATABASE_ONLY)
def run_stats(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("stats", settings, lambda api: _stats(api, args))


def _stats(api: LocalApi, args: argparse.Namespace) -> int:
    data = api.run(STATS, {"hours": args.hours})
    if args.json:
        print_json(data)
        return EXIT_OK
    stats, history = data["stats"], data["attemptHistory"]
    for row in stats["byStatus"]:
        print(f"{Status[row['status']]:<12} {row['count']:>10,}")
    oldest = stats["oldestDueAgeSeconds"]
    print(f"{'queue depth':<12} {stats['queueDepth']:>10,}")
    waits = "-" if oldest is None else format_duration(oldest, parts=2)
    print(f"oldest sendable delivery waits {waits}")
    print(f"rejected broker messages {stats['rejectedEvents']:,}")
    print(f"\nattempts of the last {args.hours} h by config"
          f"{'' if history['complete'] else ' (newest attempts only: counts too few)'}:")
    print_table(["CONFIG", "ATTEMPTS", "SUCCEEDED", "SUCCESS RATE"],
                [[c["configName"] or c["configId"], c["attempts"], c["succeeded"],
                  f"{c['successRate']:.1%}"] for c in history["configs"]])
    return EXIT_OK

"""`webhooks backfill-deliveries`: the upgrade adapter from the former attempts table."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from db import backfill as former
from db.vocabulary import Status
from service.commands.progress import Progress
from service.commands.registry import EXIT_OK, command
from service.ingest import former_model
from service.runtime.settings import Settings

SUMMARY_ORDER = (Status.PENDING, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, "attempts")


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=int, default=500,
                        help="former webhooks converted per transaction (default: 500)")


@command("backfill-deliveries",
         "convert outstanding retries and recent history of the former attempts table "
         "into deliveries (resumable, idempotent)", _arguments,
         settings=("database_url", "retention_succeeded", "retention_failed"))
def run_backfill(args: argparse.Namespace, settings: Settings) -> int:
    pool = settings.connection_pool(size=2, application_name="webhooks-backfill")
    try:
        if not former.has_former_table(pool):
            print("nothing to backfill: this database has no former attempts table",
                  file=sys.stderr)
            return EXIT_OK
        progress = Progress("backfill")
        started = time.monotonic()

        def report(done: int, total: int, counts: Counter) -> None:
            rate = done / max(time.monotonic() - started, 1e-6)
            progress.update(done, f"{done:,}/{total:,} webhooks, {rate:,.0f}/s, "
                            f"{counts.get(Status.PENDING, 0):,} pending", total=total)

        counts = former_model.run(pool, keep_succeeded=settings.retention_succeeded,
                                  keep_failed=settings.retention_failed,
                                  batch_size=max(1, args.batch_size), report=report)
        progress.finish(f"{sum(counts.get(s, 0) for s in Status):,} deliveries")
        print(summary(counts), file=sys.stderr)
        return EXIT_OK
    finally:
        pool.close()


def summary(counts: Counter) -> str:
    """Return the closing report: what became of the former webhooks."""
    lines = ["backfill complete"]
    for key in SUMMARY_ORDER:
        lines.append(f"  {key:<30} {counts.get(key, 0):>10,}")
    for key in sorted(k for k in counts if k not in SUMMARY_ORDER):
        lines.append(f"  {key:<30} {counts[key]:>10,}")
    return "\n".join(lines)

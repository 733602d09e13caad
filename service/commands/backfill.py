"""`webhooks backfill-deliveries`: the upgrade adapter from the former attempts table."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from db import backfill as former
from db.vocabulary import Status
from service.commands.registry import EXIT_OK, command
from service.ingest import former_model
from service.runtime.settings import Settings

SUMMARY_ORDER = (Status.PENDING, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, "attempts")


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=int, default=500,
                        help="former webhooks converted per transaction (default: 500)")


@command("backfill-deliveries",
         "convert outstanding retries and recent history of the former attempts table "
         "into deliveries (resumable, idempotent)", _arguments)
def run_backfill(args: argparse.Namespace, settings: Settings) -> int:
    pool = settings.connection_pool(size=2, application_name="webhooks-backfill")
    try:
        if not former.has_former_table(pool):
            print("nothing to backfill: this database has no former attempts table",
                  file=sys.stderr)
            return EXIT_OK
        bar = ProgressBar(sys.stderr)
        counts = former_model.run(pool, keep_succeeded=settings.retention_succeeded,
                              keep_failed=settings.retention_failed,
                              batch_size=max(1, args.batch_size), report=bar.update)
        bar.finish()
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


class ProgressBar:
    """Draw `done/total` on a terminal, or print a line every few seconds elsewhere."""

    WIDTH = 30
    LINE_EVERY = 5.0  # seconds between progress lines when not on a terminal

    def __init__(self, stream) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self.last_line = 0.0

    def update(self, done: int, total: int, counts: Counter) -> None:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        share = done / total if total else 1.0
        text = (f"{share:6.1%} {done:,}/{total:,} webhooks, {done / elapsed:,.0f}/s, "
                f"{counts.get(Status.PENDING, 0):,} pending")
        if self.tty:
            filled = int(share * self.WIDTH)
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {text}")
            self.stream.flush()
        elif time.monotonic() - self.last_line >= self.LINE_EVERY or done == total:
            self.last_line = time.monotonic()
            print(f"backfill: {text}", file=self.stream, flush=True)

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")

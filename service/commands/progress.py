"""Progress of a long command on stderr: a redrawn bar on a terminal, a line every few
seconds elsewhere (a log, a pipe), so that stdout keeps only the command's result."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


class Progress:
    """Report `done` of `total` with a one-line `detail`, labelled with the command's name."""

    WIDTH = 30
    LINE_EVERY = 2.0  # seconds between progress lines when not on a terminal

    def __init__(self, label: str, total: int = 0, stream: TextIO | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.clock = clock
        self.total = total
        self.stream: Any = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.last_line = 0.0

    def update(self, done: int, detail: str, *, total: int | None = None) -> None:
        """Show `done` (of `total`, when the work learns its size as it goes)."""
        if total is not None:
            self.total = total
        share = min(done / self.total, 1.0) if self.total else 1.0
        if self.tty:
            filled = int(share * self.WIDTH)
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                              f"{share:5.0%} {detail}")
            self.stream.flush()
        elif (now := self.clock()) - self.last_line >= self.LINE_EVERY:
            self.last_line = now
            print(f"{self.label}: {share:.0%} {detail}", file=self.stream, flush=True)

    def finish(self, detail: str) -> None:
        """End the bar and say what was done."""
        if self.tty:
            self.stream.write("\n")
        print(f"{self.label}: done, {detail}", file=self.stream, flush=True)

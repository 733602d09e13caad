"""The `webhooks` program: hold an early SIGTERM first, then run the command line."""

from __future__ import annotations

from service.runtime import early_stop


def main() -> int:
    """Run the `webhooks` command line with SIGTERM held during startup."""
    early_stop.hold()
    from service.cli import main as run_command_line

    return run_command_line()

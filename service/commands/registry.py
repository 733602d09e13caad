"""Where the subcommands of `webhooks` register themselves, and what their exit codes mean.

Command modules import this, never `service.cli`: the command line imports the commands, and
the commands know only the registry.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from service.runtime.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DATABASE = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # the reader of the output went away, as a shell reports SIGPIPE

Command = Callable[[argparse.Namespace, Settings], int]
Arguments = Callable[[argparse.ArgumentParser], None]
COMMANDS: dict[str, tuple[str, Command, Arguments | None]] = {}


def command(name: str, help: str, arguments: Arguments | None = None):
    """Register a subcommand: `help` for --help, `arguments` adds its own flags."""

    def register(function: Command) -> Command:
        COMMANDS[name] = (help, function, arguments)
        return function

    return register

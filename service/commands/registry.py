"""Where the subcommands of `webhooks` register themselves, and what their exit codes mean.

Command modules import this, never `service.cli`: the command line imports the commands, and
the commands know only the registry.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from service.runtime.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DATABASE = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # the reader of the output went away, as a shell reports SIGPIPE

Run = Callable[[argparse.Namespace, Settings], int]
Arguments = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """A subcommand: what --help says, what it runs, its own flags and the settings it reads
    (its --help and its settings flags list these only)."""

    help: str
    run: Run
    arguments: Arguments | None
    settings: tuple[str, ...]
    warm_stop: bool  # a SIGTERM that arrives while it starts up stops it warmly


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, arguments: Arguments | None = None, *,
            settings: tuple[str, ...], warm_stop: bool = False):
    """Register a subcommand: this decorator is the one place a command is declared."""

    def register(function: Run) -> Run:
        COMMANDS[name] = Command(help, function, arguments, settings, warm_stop)
        return function

    return register

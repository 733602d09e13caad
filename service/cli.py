"""The `webhooks` command: migrate, worker, web, dev, tokens, backfill-deliveries.

Exit codes: 0 done, 1 failed, 2 bad usage or setting, 3 database unreachable.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402

from db.errors import DatabaseUnavailable  # noqa: E402
from service import __version__  # noqa: E402
from service.settings import Settings, SettingsError, add_arguments, flags_from  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DATABASE = 0, 1, 2, 3

Command = Callable[[argparse.Namespace, Settings], int]
Arguments = Callable[[argparse.ArgumentParser], None]
COMMANDS: dict[str, tuple[str, Command, Arguments | None]] = {}


def command(name: str, help: str, arguments: Arguments | None = None):
    """Register a subcommand: `help` for --help, `arguments` adds its own flags."""

    def register(function: Command) -> Command:
        COMMANDS[name] = (help, function, arguments)
        return function

    return register


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every registered subcommand and the settings flags on each."""
    from service import commands  # noqa: F401  (registers the subcommands)

    parser = argparse.ArgumentParser(
        prog="webhooks",
        description="Durable webhook delivery: events in, signed HTTP POSTs out.",
        epilog="Exit codes: 0 done, 1 failed, 2 bad usage or setting, 3 database unreachable.",
    )
    parser.add_argument("--version", action="version", version=f"webhooks {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help, _, arguments) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help, description=help)
        if arguments:
            arguments(sub)
        add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _, function, _ = COMMANDS[args.command]
    try:
        settings = Settings.load(flags=flags_from(args), dev=args.command == "dev")
        return function(args, settings)
    except SettingsError as error:
        print(f"webhooks {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DatabaseUnavailable as error:
        print(f"webhooks {args.command}: database unreachable: {error}", file=sys.stderr)
        return EXIT_DATABASE
    except KeyboardInterrupt:
        return 130

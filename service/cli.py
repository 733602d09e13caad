"""The `webhooks` command: migrate, worker, web, dev, tokens, backfill-deliveries, and the
on-call commands deliveries, replay, stats and configs.

Exit codes: 0 done, 1 failed, 2 bad usage or setting, 3 database unreachable.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from db.errors import DatabaseUnavailable  # noqa: E402
from service import __version__  # noqa: E402
from service.commands.registry import (  # noqa: E402
    COMMANDS,
    EXIT_BROKEN_PIPE,
    EXIT_DATABASE,
    EXIT_USAGE,
)
from service.commands.setting_flags import (  # noqa: E402
    COMMAND_SETTINGS,
    add_arguments,
    flags_from,
)
from service.runtime import early_stop  # noqa: E402
from service.runtime.settings import Settings, SettingsError  # noqa: E402
from service.runtime.status_server import PortInUse  # noqa: E402

WARM_STOP_COMMANDS = ("worker",)  # commands that stop warmly on a SIGTERM held at startup


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
        add_arguments(sub, COMMAND_SETTINGS[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in WARM_STOP_COMMANDS:
        early_stop.release()
    _, function, _ = COMMANDS[args.command]
    try:
        settings = Settings.load(flags=flags_from(args), dev=args.command == "dev")
        code = function(args, settings)
        sys.stdout.flush()  # a reader that went away is found here, not at exit
        return code
    except (SettingsError, PortInUse) as error:
        print(f"webhooks {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DatabaseUnavailable as error:
        print(f"webhooks {args.command}: database unreachable: {error}", file=sys.stderr)
        return EXIT_DATABASE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`webhooks configs list | head`): say nothing more, exit as a
        # program that SIGPIPE ended does, and let no flush at exit write to the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE

"""The `webhooks` command: migrate, worker, web, dev, tokens, backfill-deliveries, and the
on-call commands deliveries, replay, stats and configs.

Exit codes: 0 done, 1 failed, 2 bad usage or setting, 3 database unreachable; also 141 when
the reader of the output went away, and 130 when Ctrl-C interrupts a command that does not
stop warmly.
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
from service.commands.setting_flags import add_arguments, flags_from  # noqa: E402
from service.runtime import early_stop  # noqa: E402
from service.runtime.settings import Settings, SettingsError  # noqa: E402
from service.runtime.status_server import PortInUse  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every registered subcommand and the settings flags on each."""
    from service import commands  # noqa: F401  (registers the subcommands)

    parser = argparse.ArgumentParser(
        prog="webhooks",
        description="Durable webhook delivery: events in, signed HTTP POSTs out.",
        epilog="Exit codes: 0 done, 1 failed, 2 bad usage or setting, 3 database unreachable, "
               "130 interrupted (Ctrl-C), 141 the reader of the output went away.",
    )
    parser.add_argument("--version", action="version", version=f"webhooks {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, registered in COMMANDS.items():
        sub = subparsers.add_parser(name, help=registered.help, description=registered.help)
        if registered.arguments:
            registered.arguments(sub)
        add_arguments(sub, registered.settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    registered = COMMANDS[args.command]
    if not registered.warm_stop:
        early_stop.release()
    try:
        settings = Settings.load(flags=flags_from(args), dev=args.command == "dev")
        code = registered.run(args, settings)
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

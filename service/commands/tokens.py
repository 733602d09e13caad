"""`webhooks tokens create|list|revoke`: API bearer tokens for the GraphQL API."""

from __future__ import annotations

import argparse
import sys

from db import tokens
from db.errors import InvalidInput, NotFound
from db.pool import ConnectionPool
from service.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, command
from service.settings import Settings, add_arguments


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="mint a token and print it (shown once)")
    create.add_argument("--role", required=True, choices=tokens.ROLES,
                        help="viewer may query; operator may also mutate")
    create.add_argument("--name", required=True, help="a unique name, used to revoke it")
    listing = actions.add_parser("list",
                                 help="list live tokens (names and roles, never the tokens)")
    revoke = actions.add_parser("revoke", help="revoke a token by name")
    revoke.add_argument("name")
    for action in (create, listing, revoke):  # settings flags work after the action too
        add_arguments(action)


@command("tokens", "create, list or revoke API tokens", _arguments)
def run_tokens(args: argparse.Namespace, settings: Settings) -> int:
    pool = ConnectionPool(settings.require_database_url(), size=1,
                          application_name="webhooks-tokens")
    try:
        if args.action == "create":
            _, plain = tokens.create(pool, name=args.name, role=args.role)
            print(plain)
        elif args.action == "list":
            for token in tokens.live(pool):
                used = token.last_used_at.isoformat() if token.last_used_at else "never"
                print(f"{token.name}\t{token.role}\tcreated {token.created_at.isoformat()}"
                      f"\tlast used {used}")
        else:
            tokens.revoke(pool, args.name)
            print(f"revoked {args.name}", file=sys.stderr)
        return EXIT_OK
    except InvalidInput as error:
        print(f"webhooks tokens: {error}", file=sys.stderr)
        return EXIT_USAGE
    except NotFound as error:
        print(f"webhooks tokens: {error}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        pool.close()

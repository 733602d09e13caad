"""`webhooks tokens create|list|revoke`: API bearer tokens for the GraphQL API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from db import tenants, tokens
from db.errors import InvalidInput, NotFound
from db.scope import PLATFORM
from graphql_schema import audit
from graphql_schema.errors import code_for
from service.commands.registry import EXIT_FAILED, EXIT_OK, EXIT_USAGE, command
from service.commands.setting_flags import OPERATOR_COMMAND, add_arguments
from service.policy.durations import parse_duration
from service.runtime.logs import audit_lines, cli_actor
from service.runtime.settings import Settings

T = TypeVar("T")


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="mint a token and print it (shown once)")
    create.add_argument("--role", required=True, choices=tokens.ROLES,
                        help="viewer may query; operator may also mutate")
    create.add_argument("--name", required=True, help="a unique name, used to revoke it")
    create.add_argument("--tenant", metavar="UID",
                        help="act for this tenant only (its uid); default: the whole platform")
    create.add_argument("--expires-in", metavar="DURATION",
                        help="stop accepting it after this long, e.g. 12h or 30d "
                             "(default: valid until revoked)")
    listing = actions.add_parser("list",
                                 help="list live tokens (names and roles, never the tokens)")
    revoke = actions.add_parser("revoke", help="revoke a token by name")
    revoke.add_argument("name")
    for action in (create, listing, revoke):  # settings flags work after the action too
        add_arguments(action, OPERATOR_COMMAND)


@command("tokens", "create, list or revoke API tokens", _arguments,
         settings=OPERATOR_COMMAND)
def run_tokens(args: argparse.Namespace, settings: Settings) -> int:
    pool = settings.connection_pool(size=1, application_name="webhooks-tokens")
    try:
        if args.action == "create":
            expires_in = _duration(args.expires_in)
            tenant_id = None if args.tenant is None else _tenant_id(pool, args.tenant)
            _, plain = _audited(settings, "tokens create",
                                {"token_name": args.name, "role": args.role,
                                 "tenant": args.tenant},
                                lambda: tokens.create(pool, name=args.name, role=args.role,
                                                      tenant_id=tenant_id,
                                                      expires_in=expires_in))
            print(plain)
        elif args.action == "list":
            now = datetime.now(UTC)
            for token in tokens.live(pool):
                used = token.last_used_at.isoformat() if token.last_used_at else "never"
                ends = ("never expires" if token.expires_at is None else
                        f"{'expired' if token.expired(now) else 'expires'} "
                        f"{token.expires_at.isoformat()}")
                reach = f"tenant {token.tenant_uid}" if token.tenant_uid else "platform"
                print(f"{token.name}\t{token.role}\t{reach}"
                      f"\tcreated {token.created_at.isoformat()}\tlast used {used}\t{ends}")
        else:
            _audited(settings, "tokens revoke", {"token_name": args.name},
                     lambda: tokens.revoke(pool, args.name))
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


def _audited(settings: Settings, action: str, ids: dict[str, str],
             change: Callable[[], T]) -> T:
    """Make `change` and leave its audit line (the token's name, never the token)."""
    with audit_lines(settings.audit_log):
        try:
            result = change()
        except Exception as error:
            audit.write(action, cli_actor(), "operator", ids, code_for(error))
            raise
        audit.write(action, cli_actor(), "operator", ids, "ok")
        return result


def _tenant_id(pool, uid: str) -> int:
    """Return the id of the live tenant `uid`; raise NotFound for an unknown or deleted one."""
    return tenants.resolve(pool, PLATFORM, uid).id


def _duration(text: str | None) -> float | None:
    """Return the seconds of a --expires-in value, or None; raise InvalidInput if malformed."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as error:
        raise InvalidInput(f"--expires-in: {error}") from None

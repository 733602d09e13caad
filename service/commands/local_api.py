"""What the on-call commands share: the API run in-process, filters as flags, output, exits.

The commands go through the GraphQL schema itself (with an operator's rights, on the
database of DATABASE_URL), so they apply exactly the API's rules, checks and errors; with
`--tenant UID` they act as an operator token of that tenant would, on its data only.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from db import tenants
from db.pool import ConnectionPool
from db.scope import PLATFORM, Scope
from db.vocabulary import Status
from graphql_schema.errors import BAD_USER_INPUT, NOT_FOUND, UNAVAILABLE, code_of
from graphql_schema.schema import schema
from service.commands.registry import EXIT_DATABASE, EXIT_FAILED, EXIT_USAGE
from service.ingest import envelope
from service.policy.durations import format_duration, parse_duration
from service.runtime.api_context import api_context
from service.runtime.logs import audit_lines, cli_actor
from service.runtime.settings import Settings
from service.runtime.telemetry import Telemetry


class ApiFailure(Exception):
    """An operation the API refused; `code` is its error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def exit_code(self) -> int:
        """Return the exit code for this failure: 2 bad input, 3 database down, else 1."""
        return {BAD_USER_INPUT: EXIT_USAGE, UNAVAILABLE: EXIT_DATABASE}.get(self.code,
                                                                              EXIT_FAILED)


class LocalApi:
    """Run GraphQL operations in this process, as an operator token would over HTTP (a
    platform-wide one, or one of the tenant `tenant_uid`)."""

    def __init__(self, settings: Settings, pool: ConnectionPool, *,
                 tenant_uid: str | None = None) -> None:
        self.settings = settings
        self.pool = pool
        self.telemetry = Telemetry(otlp_endpoint=settings.otlp_endpoint, role="cli")
        self.tenant_uid = tenant_uid  # act as a token of this tenant would (None: platform)
        self._scope: Scope | None = None

    def run(self, query: str, variables: dict | None = None, *,
            idempotency_key: str | None = None) -> dict[str, Any]:
        """Return the data of an operation, or raise ApiFailure with the API's code."""
        context = api_context(self.pool, self.telemetry, self.settings, role="operator",
                              token_name=cli_actor(), scope=self.scope(),
                              tenant_uid=self.tenant_uid, idempotency_key=idempotency_key,
                              read_rejected=functools.partial(
                                  envelope.read_again, max_payload=self.settings.max_payload))
        result = schema.execute_sync(query, variable_values=variables or {},
                                     context_value=context)
        if result.errors:
            error = result.errors[0]
            raise ApiFailure(code_of(error), "; ".join(e.message for e in result.errors))
        return result.data

    @property
    def platform(self) -> bool:
        """True when it acts for the whole platform (its listings then name each row's
        tenant)."""
        return self.tenant_uid is None

    def scope(self) -> Scope:
        """Return whose data the commands act on: the platform's, or one tenant's (looked up
        once by its uid; an unknown one is NOT_FOUND)."""
        if self._scope is None:
            if self.tenant_uid is None:
                self._scope = PLATFORM
            else:
                found = tenants.get(self.pool, PLATFORM, self.tenant_uid)
                if found is None or found.deleted_at is not None:
                    raise ApiFailure(NOT_FOUND, f"tenant {self.tenant_uid!r} not found")
                self._scope = Scope(found.id)
        return self._scope


@contextmanager
def local_api(settings: Settings, name: str, *,
              tenant_uid: str | None = None) -> Iterator[LocalApi]:
    """Yield a LocalApi on the configured database, acting for the tenant `tenant_uid` (None:
    the platform); close its connections afterwards."""
    pool = settings.connection_pool(size=2, application_name=f"webhooks-{name}")
    try:
        yield LocalApi(settings, pool, tenant_uid=tenant_uid)
    finally:
        pool.close()


def run_command(name: str, settings: Settings, body: Callable[[LocalApi], int], *,
                tenant_uid: str | None = None) -> int:
    """Run `body` with a LocalApi acting for the tenant `tenant_uid` (None: the platform);
    report an API refusal on stderr and return its exit code (an unknown tenant: not found,
    1)."""
    try:
        with audit_lines(settings.audit_log), local_api(settings, name,
                                                        tenant_uid=tenant_uid) as api:
            api.scope()  # an unknown tenant is said before anything else is asked
            return body(api)
    except ApiFailure as failure:
        print(f"webhooks {name}: {failure} ({failure.code})", file=sys.stderr)
        return failure.exit_code


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the API's JSON answer instead of text, for scripts")


def add_tenant_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", metavar="UID",
                        help="act as an operator token of this tenant would: its data only "
                             "(default: the whole platform's, each row naming its tenant)")


def add_filter_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flags of a delivery filter (the API's DeliveryFilter) to `parser`."""
    group = parser.add_argument_group("filter (every given flag must match)")
    group.add_argument("--status", action="append", choices=[status.value for status in Status],
                       help="a status; repeat for several")
    group.add_argument("--config", action="append", metavar="ID|NAME",
                       help="a config, by id or name; repeat for several")
    group.add_argument("--event-type", action="append", metavar="TYPE",
                       help="an event type; repeat for several")
    group.add_argument("--event-id", metavar="ID")
    group.add_argument("--status-code", action="append", type=int, metavar="CODE",
                       help="the last response's status code (0: no response); repeatable")
    group.add_argument("--since", metavar="DURATION",
                       help="created within this long before now, e.g. 30m, 24h, 7d")
    group.add_argument("--created-after", metavar="RFC3339", help="created at or after")
    group.add_argument("--created-before", metavar="RFC3339", help="created before")


FIND_CONFIG = """query ($search: String!) {
  configs(filter: {search: $search}, first: 100) { edges { node { id name } } }
}"""


def config_id(api: LocalApi, reference: str, *, unknown_as_id: bool = False) -> str:
    """Return the id of the config `reference` names: its id, or its exact name when one
    config has it; raise ApiFailure: bad input for a name several configs have, not found
    for an unknown one (or, with `unknown_as_id`, return it as an id for the API to refuse
    and audit)."""
    found = [edge["node"] for edge in api.run(FIND_CONFIG, {"search": reference})
             ["configs"]["edges"]]
    if any(config["id"] == reference for config in found):
        return reference
    named = [config["id"] for config in found if config["name"] == reference]
    if len(named) == 1:
        return named[0]
    if named:
        raise ApiFailure(BAD_USER_INPUT, f"{len(named)} configs are named {reference!r} "
                                         f"({', '.join(named)}): give an id")
    if unknown_as_id:
        return reference
    raise ApiFailure(NOT_FOUND, f"no config has the id or the name {reference!r}")


def filter_of(args: argparse.Namespace, api: LocalApi) -> dict[str, Any]:
    """Return the API filter the flags describe (configs by id or name); raise ApiFailure on
    a malformed time or an unknown config."""
    after = args.created_after
    if args.since:
        if after:
            raise ApiFailure(BAD_USER_INPUT, "give --since or --created-after, not both")
        try:
            after = (datetime.now(UTC) - timedelta(seconds=parse_duration(args.since)))
        except ValueError as error:
            raise ApiFailure(BAD_USER_INPUT, f"--since: {error}") from None
        after = after.isoformat()
    given = {
        "status": [Status(status).name for status in args.status or ()],
        "configIds": [config_id(api, reference) for reference in args.config or ()],
        "eventTypes": args.event_type, "eventId": args.event_id,
        "lastStatusCodes": args.status_code, "createdAfter": after,
        "createdBefore": args.created_before,
    }
    return {key: value for key, value in given.items() if value}


def with_tenant(api: LocalApi, cells: list[Any], at: int, node: dict | None = None
                ) -> list[Any]:
    """Return a listing's row (or, without `node`, its headers) with the TENANT column at
    `at` when it lists the whole platform's rows; as it is for a tenant's."""
    if not api.platform:
        return cells
    return [*cells[:at], "TENANT" if node is None else node["tenant"]["uid"], *cells[at:]]


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """Print rows as aligned text columns under their headers."""
    texts = [[("-" if cell is None else str(cell)) for cell in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in texts)]) for i, h in enumerate(headers)]
    for row in [headers, *texts]:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())


def instant(iso: str | None) -> str:
    """Return an instant in the one convention of the command line: ISO 8601 in UTC to the
    second with its zone, and how long ago (or in how long) it is, e.g.
    `2026-12-04T19:30:05Z (3m5s ago)`; `-` for none."""
    if iso is None:
        return "-"
    return f"{utc(iso)} ({ago(iso)})"


def utc(iso: str) -> str:
    """Return an instant as ISO 8601 in UTC to the second: `2026-12-04T19:30:05Z`."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(iso: str | None) -> str:
    """Return an instant as `3m5s ago` / `in 2h10m`, or `-` for none."""
    if iso is None:
        return "-"
    seconds = (datetime.fromisoformat(iso) - datetime.now(UTC)).total_seconds()
    text = format_duration(abs(seconds), parts=2)
    return f"{text} ago" if seconds < 0 else f"in {text}"

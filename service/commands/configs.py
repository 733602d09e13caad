"""`webhooks configs list|pause|resume|update`: the subscribers, their health and recent
success rate, and how their deliveries are ordered."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from db.vocabulary import HealthState, Ordering
from graphql_schema.errors import BAD_USER_INPUT
from service.commands.local_api import (
    ApiFailure,
    LocalApi,
    add_output_flag,
    add_tenant_flag,
    ago,
    config_id,
    instant,
    print_json,
    print_table,
    run_command,
    with_tenant,
)
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import OPERATOR_COMMAND, add_arguments
from service.runtime.settings import Settings

LIST = """query ($filter: ConfigFilter, $withTenant: Boolean!) {
  configs(filter: $filter, first: 1000) {
    edges { node { id name endpoint eventTypes active createdAt
                   health { state consecutiveFailures lastFailure lastFailureAt pausedAt reason }
                   recentAttempts(hours: 24) { attempts successRate }
                   tenant @include(if: $withTenant) { uid } } }
  }
}"""
# How long an endpoint must have gone without a failure, its last attempt a success, to be
# called recovered: one that fails on and off is not.
RECOVERED_AFTER = timedelta(minutes=5)
CHANGES = {
    "pause": """mutation ($id: ID!, $reason: String) {
  change: pauseConfig(id: $id, reason: $reason) { changed message config { id health { state } } }
}""",
    "resume": """mutation ($id: ID!, $reason: String) {
  change: resumeConfig(id: $id, reason: $reason) { changed message config { id health { state } } }
}""",
}
HISTORY = """query ($id: ID!, $first: Int!) {
  config(id: $id) { id name healthChanges(first: $first) {
    edges { node { changedAt change actor reason } } hasNextPage } }
}"""
UPDATE = """mutation ($id: ID!, $input: UpdateConfigInput!) {
  config: updateConfig(id: $id, input: $input) { id name ordering blockOnFailure }
}"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list configs with their health and success rate")
    listing.add_argument("--active", choices=("yes", "no"), help="only active or inactive ones")
    listing.add_argument("--health", choices=list(HealthState), help="only those in this state")
    listing.add_argument("--search", help="only those whose name or endpoint holds this text "
                                          "(any case), or the one with this id")
    pause = actions.add_parser("pause", help="pause a config: nothing is attempted, nothing "
                                             "cancelled, until it is resumed")
    resume = actions.add_parser("resume", help="resume a paused config")
    for action in (pause, resume):
        action.add_argument("id", metavar="ID|NAME", help="the config, by id or name")
        action.add_argument("--reason", help="why, kept with the config's health")
    history = actions.add_parser("history", help="a config's health history, newest first: "
                                                 "pauses, resumes, circuit transitions, "
                                                 "deactivations, with who and why")
    history.add_argument("id", metavar="ID|NAME", help="the config, by id or name")
    history.add_argument("--limit", type=int, default=50,
                         help="changes to show, 1 to 1000 (default: 50)")
    update = actions.add_parser("update", help="change how a config's deliveries are ordered")
    update.add_argument("id", metavar="ID|NAME", help="the config, by id or name")
    update.add_argument("--ordering", choices=[_word(ordering) for ordering in Ordering],
                        help="per-key: the deliveries of one ordering key are attempted one "
                             "at a time, in the order their events were ingested")
    update.add_argument("--block-on-failure", choices=("yes", "no"),
                        help="yes: a failed delivery holds its key until it is replayed and "
                             "succeeds or is skipped; no: the key moves on")
    for action in (listing, pause, resume, history, update):
        add_output_flag(action)
        add_tenant_flag(action)
        add_arguments(action, OPERATOR_COMMAND)


@command("configs", "list, pause, resume or update configs (same rules as the API)", _arguments,
         settings=OPERATOR_COMMAND)
def run_configs(args: argparse.Namespace, settings: Settings) -> int:
    body = {"list": _list, "update": _update, "history": _history}.get(args.action, _change)
    return run_command("configs", settings, lambda api: body(api, args),
                       tenant_uid=args.tenant)


def _list(api: LocalApi, args: argparse.Namespace) -> int:
    active = None if args.active is None else args.active == "yes"
    health = args.health.upper() if args.health else None
    data = api.run(LIST, {"filter": {"active": active, "health": health,
                                     "search": args.search}, "withTenant": api.platform})
    configs = [edge["node"] for edge in data["configs"]["edges"]]
    if args.json:
        print_json(configs)
        return EXIT_OK
    print_table(with_tenant(api, ["ID", "NAME", "STATE", "HEALTH", "ATTEMPTS 24H", "SUCCESS",
                                  "LAST FAILURE"], 2),
                [with_tenant(api, [c["id"], c["name"], "active" if c["active"] else "inactive",
                                   _health(c["health"]), c["recentAttempts"]["attempts"],
                                   None if c["recentAttempts"]["successRate"] is None
                                   else f"{c['recentAttempts']['successRate']:.1%}",
                                   _last_failure(c["health"])], 2, c)
                 for c in configs])
    return EXIT_OK


def _health(health: dict) -> str:
    """The health in words: a closed circuit whose last attempts failed is failing, not
    healthy."""
    if health["state"] == "HEALTHY" and health["consecutiveFailures"]:
        return f"failing ({health['consecutiveFailures']} in a row)"
    return health["state"].lower()


def _last_failure(health: dict) -> str | None:
    """The last retryable failure with when it happened, or None; after a recovery (the
    circuit closed, the last attempt a success, no failure for RECOVERED_AFTER) marked as
    past."""
    if health["lastFailure"] is None:
        return None
    when = ago(health["lastFailureAt"]) if health["lastFailureAt"] else "when unknown"
    recovered = (health["state"] == "HEALTHY" and not health["consecutiveFailures"]
                 and health["lastFailureAt"] is not None
                 and datetime.now(UTC) - datetime.fromisoformat(health["lastFailureAt"])
                 >= RECOVERED_AFTER)
    return f"{'recovered; before: ' if recovered else ''}{when}: {health['lastFailure']}"


def _history(api: LocalApi, args: argparse.Namespace) -> int:
    config = api.run(HISTORY, {"id": config_id(api, args.id), "first": args.limit})["config"]
    changes = [edge["node"] for edge in config["healthChanges"]["edges"]]
    if args.json:
        print_json(changes)
        return EXIT_OK
    print_table(["WHEN", "CHANGE", "BY", "WHY"],
                [[instant(c["changedAt"]), c["change"].lower(), c["actor"] or "service",
                  c["reason"]] for c in changes])
    more = "; more with a larger --limit" if config["healthChanges"]["hasNextPage"] else ""
    print(f"{len(changes)} changes of {config['name'] or config['id']}{more}")
    return EXIT_OK


def _change(api: LocalApi, args: argparse.Namespace) -> int:
    change = api.run(CHANGES[args.action], {"id": config_id(api, args.id, unknown_as_id=True),
                                            "reason": args.reason})["change"]
    if args.json:
        print_json(change)
    else:
        print(change["message"])
    return EXIT_OK


def _update(api: LocalApi, args: argparse.Namespace) -> int:
    changes: dict[str, object] = {}
    if args.ordering is not None:
        changes["ordering"] = Ordering(args.ordering.replace("-", "_")).name
    if args.block_on_failure is not None:
        changes["blockOnFailure"] = args.block_on_failure == "yes"
    if not changes:
        raise ApiFailure(BAD_USER_INPUT, "nothing to change: give --ordering or "
                                         "--block-on-failure")
    config = api.run(UPDATE, {"id": config_id(api, args.id), "input": changes})["config"]
    if args.json:
        print_json(config)
    else:
        print(f"config {config['name']} ({config['id']}): ordering "
              f"{_word(Ordering[config['ordering']])}, block on failure "
              f"{'yes' if config['blockOnFailure'] else 'no'}")
    return EXIT_OK


def _word(ordering: Ordering) -> str:
    """Return how the command line spells an ordering: per-key, unordered."""
    return ordering.value.replace("_", "-")

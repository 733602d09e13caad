"""`webhooks deliveries list|show`: find deliveries and look at one, as the API shows them."""

from __future__ import annotations

import argparse
import json

from db.vocabulary import HeldBy, Status
from graphql_schema.errors import NOT_FOUND
from service.commands.local_api import (
    ApiFailure,
    LocalApi,
    add_filter_flags,
    add_output_flag,
    add_tenant_flag,
    filter_of,
    instant,
    print_json,
    print_table,
    run_command,
    utc,
    with_tenant,
)
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import OPERATOR_COMMAND, add_arguments
from service.runtime.settings import Settings

LIST = """query ($filter: DeliveryFilter, $first: Int, $after: String, $orderBy: DeliveryOrder!,
        $withTenant: Boolean!) {
  deliveries(filter: $filter, first: $first, after: $after, orderBy: $orderBy) {
    totalCount totalCountIsExact
    edges { node { id webhookId eventId eventType configId configName status attemptCount
                   replayGeneration nextAttemptAt lastStatusCode lastError createdAt
                   heldBy { by since until reason behind }
                   tenant @include(if: $withTenant) { uid } } }
    pageInfo { hasNextPage endCursor }
  }
}"""

SHOW = """query ($id: ID!, $withTenant: Boolean!) {
  delivery(id: $id) {
    tenant @include(if: $withTenant) { uid name }
    id webhookId eventId eventType configId configName status attemptCount replayGeneration
    nextAttemptAt lastStatusCode lastError createdAt updatedAt occurredAt payload
    heldBy { by since until reason behind }
    attempts { attemptNumber replayGeneration endpoint outcome statusCode durationMs
               responseExcerpt error createdAt }
  }
}"""


BY_WEBHOOK_ID = """query ($id: String) {
  deliveries(filter: {webhookId: $id}, first: 1) { edges { node { id } } }
}"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list deliveries matching a filter, newest first")
    add_filter_flags(listing)
    listing.add_argument("--limit", type=int, default=50, help="rows to show (default: 50)")
    listing.add_argument("--after", metavar="CURSOR", help="continue after this cursor")
    listing.add_argument("--due", action="store_true",
                         help="sort by next attempt, soonest first (pending work)")
    show = actions.add_parser("show", help="show one delivery: what holds it, its attempts "
                                           "with the endpoint's answers, its payload")
    show.add_argument("id", metavar="ID|WEBHOOK-ID",
                      help="the delivery's number, or the webhook-id its receiver logged (msg_…)")
    for action in (listing, show):
        add_output_flag(action)
        add_tenant_flag(action)
        add_arguments(action, OPERATOR_COMMAND)


@command("deliveries", "list deliveries or show one (same rules as the API)", _arguments,
         settings=OPERATOR_COMMAND)
def run_deliveries(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("deliveries", settings,
                       lambda api: (_list if args.action == "list" else _show)(api, args),
                       tenant_uid=args.tenant)


ERROR_WIDTH = 40  # characters of an error a list row shows


def held_by(hold: dict | None) -> str | None:
    """Return what holds a delivery back, in a word or two (`circuit until …`)."""
    if hold is None:
        return None
    word = HeldBy[hold["by"]].value.replace("_", " ")
    if hold["until"]:
        return f"{word} until {utc(hold['until'])}"
    if hold["behind"]:
        return f"{word} (behind {hold['behind']})"
    return word


def _hold_text(hold: dict | None) -> str | None:
    if hold is None:
        return None
    since = f" since {instant(hold['since'])}" if hold["since"] else ""
    why = f": {hold['reason']}" if hold["reason"] else ""
    return f"{held_by(hold)}{since}{why}"


def shortened(text: str | None, width: int) -> str | None:
    """Return `text` on one line, cut to `width` characters with an ellipsis."""
    if text is None:
        return None
    line = " ".join(text.split())
    return line if len(line) <= width else line[:width - 1] + "…"


def _delivery_id(api: LocalApi, reference: str) -> str:
    """Return the number of the delivery `reference` names: its number, or the webhook-id
    (`msg_…`) a receiver logged."""
    if reference.isdigit():
        return reference
    edges = api.run(BY_WEBHOOK_ID, {"id": reference})["deliveries"]["edges"]
    if not edges:
        raise ApiFailure(NOT_FOUND, f"no delivery has the webhook-id {reference!r}")
    return edges[0]["node"]["id"]


def _list(api: LocalApi, args: argparse.Namespace) -> int:
    data = api.run(LIST, {"filter": filter_of(args, api), "first": args.limit, "after": args.after,
                          "orderBy": "NEXT_ATTEMPT_AT" if args.due else "CREATED_AT_DESC",
                          "withTenant": api.platform})
    connection = data["deliveries"]
    if args.json:
        print_json(connection)
        return EXIT_OK
    print_table(
        with_tenant(api, ["ID", "STATUS", "HELD BY", "EVENT TYPE", "CONFIG", "ATTEMPTS", "CODE",
                          "LAST ERROR", "NEXT ATTEMPT" if args.due else "CREATED"], 4),
        [with_tenant(api, [n["id"], Status[n["status"]], held_by(n["heldBy"]), n["eventType"],
                           n["configName"] or n["configId"], n["attemptCount"],
                           n["lastStatusCode"], shortened(n["lastError"], ERROR_WIDTH),
                           instant(n["nextAttemptAt"] if args.due else n["createdAt"])], 4, n)
         for n in (edge["node"] for edge in connection["edges"])])
    exact = "" if connection["totalCountIsExact"] else "about "
    more = (f"; more with --after {connection['pageInfo']['endCursor']}"
            if connection["pageInfo"]["hasNextPage"] else "")
    print(f"{len(connection['edges'])} shown of {exact}{connection['totalCount']} matching{more}")
    return EXIT_OK


def _show(api: LocalApi, args: argparse.Namespace) -> int:
    delivery = api.run(SHOW, {"id": _delivery_id(api, args.id),
                              "withTenant": api.platform})["delivery"]
    if args.json:
        print_json(delivery)
        return EXIT_OK
    print(f"delivery {delivery['id']}  {Status[delivery['status']]}")
    for label, value in (
        ("webhook id", delivery["webhookId"]),
        ("event", f"{delivery['eventId']} ({delivery['eventType']})"),
        ("config", f"{delivery['configName'] or '-'} ({delivery['configId']})"),
        *((("tenant", f"{delivery['tenant']['name']} ({delivery['tenant']['uid']})"),)
          if api.platform else ()),
        ("attempts", f"{delivery['attemptCount']} in generation "
                     f"{delivery['replayGeneration']}"),
        ("held by", _hold_text(delivery["heldBy"])),
        ("next attempt", instant(delivery["nextAttemptAt"])),
        ("last code", delivery["lastStatusCode"]),
        ("last error", delivery["lastError"]),
        ("created", instant(delivery["createdAt"])),
    ):
        print(f"  {label:<13} {'-' if value is None else value}")
    print("attempts (oldest first):")
    print_table(["#", "GEN", "OUTCOME", "CODE", "MS", "AT", "ERROR"],
                [[a["attemptNumber"], a["replayGeneration"], a["outcome"].lower(), a["statusCode"],
                  a["durationMs"], instant(a["createdAt"]), a["error"]]
                 for a in delivery["attempts"]])
    answered = [a for a in delivery["attempts"] if a["responseExcerpt"]]
    if answered:
        last = answered[-1]
        print(f"last answer (attempt {last['attemptNumber']}, HTTP {last['statusCode']}, "
              f"{instant(last['createdAt'])}):")
        print(f"  {last['responseExcerpt']}")
    print("payload:")
    print(json.dumps(delivery["payload"], indent=2))
    return EXIT_OK

"""`webhooks deliveries list|show`: find deliveries and look at one, as the API shows them."""

from __future__ import annotations

import argparse
import json

from db.vocabulary import Status
from service.commands.local_api import (
    LocalApi,
    add_filter_flags,
    add_output_flag,
    ago,
    filter_of,
    print_json,
    print_table,
    run_command,
)
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import DATABASE_ONLY, add_arguments
from service.runtime.settings import Settings

LIST = """query ($filter: DeliveryFilter, $first: Int, $after: String, $orderBy: DeliveryOrder!) {
  deliveries(filter: $filter, first: $first, after: $after, orderBy: $orderBy) {
    totalCount totalCountIsExact
    edges { node { id eventId eventType configId configName status attemptCount
                   replayGeneration nextAttemptAt lastStatusCode lastError createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}"""

SHOW = """query ($id: ID!) {
  delivery(id: $id) {
    id webhookId eventId eventType configId configName status attemptCount replayGeneration
    nextAttemptAt lastStatusCode lastError createdAt updatedAt occurredAt payload
    attempts { attemptNumber replayGeneration endpoint outcome statusCode durationMs
               responseExcerpt error createdAt }
  }
}"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list deliveries matching a filter, newest first")
    add_filter_flags(listing)
    listing.add_argument("--limit", type=int, default=50, help="rows to show (default: 50)")
    listing.add_argument("--after", metavar="CURSOR", help="continue after this cursor")
    listing.add_argument("--due", action="store_true",
                         help="sort by next attempt, soonest first (pending work)")
    show = actions.add_parser("show", help="show one delivery: payload and attempts")
    show.add_argument("id")
    for action in (listing, show):
        add_output_flag(action)
        add_arguments(action, DATABASE_ONLY)


@command("deliveries", "list deliveries or show one (same rules as the API)", _arguments,
         settings=DATABASE_ONLY)
def run_deliveries(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("deliveries", settings,
                       lambda api: (_list if args.action == "list" else _show)(api, args))


def _list(api: LocalApi, args: argparse.Namespace) -> int:
    data = api.run(LIST, {"filter": filter_of(args, api), "first": args.limit, "after": args.after,
                          "orderBy": "NEXT_ATTEMPT_AT" if args.due else "CREATED_AT_DESC"})
    connection = data["deliveries"]
    if args.json:
        print_json(connection)
        return EXIT_OK
    print_table(
        ["ID", "STATUS", "EVENT TYPE", "CONFIG", "ATTEMPTS", "CODE",
         "NEXT ATTEMPT" if args.due else "CREATED"],
        [[n["id"], Status[n["status"]], n["eventType"], n["configName"] or n["configId"],
          n["attemptCount"], n["lastStatusCode"],
          ago(n["nextAttemptAt"] if args.due else n["createdAt"])]
         for n in (edge["node"] for edge in connection["edges"])])
    exact = "" if connection["totalCountIsExact"] else "about "
    more = (f"; more with --after {connection['pageInfo']['endCursor']}"
            if connection["pageInfo"]["hasNextPage"] else "")
    print(f"{len(connection['edges'])} shown of {exact}{connection['totalCount']} matching{more}")
    return EXIT_OK


def _show(api: LocalApi, args: argparse.Namespace) -> int:
    delivery = api.run(SHOW, {"id": args.id})["delivery"]
    if args.json:
        print_json(delivery)
        return EXIT_OK
    print(f"delivery {delivery['id']}  {Status[delivery['status']]}")
    for label, value in (
        ("webhook id", delivery["webhookId"]),
        ("event", f"{delivery['eventId']} ({delivery['eventType']})"),
        ("config", f"{delivery['configName'] or '-'} ({delivery['configId']})"),
        ("attempts", f"{delivery['attemptCount']} in generation "
                     f"{delivery['replayGeneration']}"),
        ("next attempt", ago(delivery["nextAttemptAt"])),
        ("last code", delivery["lastStatusCode"]),
        ("last error", delivery["lastError"]),
        ("created", delivery["createdAt"]),
    ):
        print(f"  {label:<13} {'-' if value is None else value}")
    print("attempts (oldest first):")
    print_table(["#", "GEN", "OUTCOME", "CODE", "MS", "AT", "ERROR"],
                [[a["attemptNumber"], a["replayGeneration"], a["outcome"].lower(), a["statusCode"],
                  a["durationMs"], a["createdAt"], a["error"]]
                 for a in delivery["attempts"]])
    print("payload:")
    print(json.dumps(delivery["payload"], indent=2))
    return EXIT_OK

"""`webhooks replay`: replay one delivery, or every delivery of a filter (with --dry-run)."""

from __future__ import annotations

import argparse
import uuid

from graphql_schema.errors import BAD_USER_INPUT
from service.commands.local_api import (
    ApiFailure,
    LocalApi,
    add_filter_flags,
    add_output_flag,
    add_tenant_flag,
    filter_of,
    print_json,
    print_table,
    run_command,
    with_tenant,
)
from service.commands.progress import Progress
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import OPERATOR_COMMAND
from service.runtime.settings import Settings

ONE = """mutation ($id: ID!) {
  replayDelivery(id: $id) { deliveryId action replayGeneration nextAttemptAt }
}"""
BULK = """mutation ($filter: DeliveryFilter!, $first: Int, $after: String, $dryRun: Boolean!,
          $withTenant: Boolean! = false) {
  replayDeliveries(filter: $filter, first: $first, after: $after, dryRun: $dryRun) {
    replayed expedited skipped { deliveryId reason } hasMore nextCursor
    dryRun wouldReplay wouldReplayIsExact
    sample { id status eventType configName createdAt tenant @include(if: $withTenant) { uid } }
  }
}"""
PAGE = 500  # deliveries per bulk replay request


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?",
                        help="the delivery to replay; omit it to replay a filter")
    add_filter_flags(parser)
    parser.add_argument("--dry-run", action="store_true",
                        help="say how many deliveries the filter would replay; change nothing")
    add_output_flag(parser)
    add_tenant_flag(parser)


@command("replay", "replay a failed (or expedite a pending) delivery, or all those of a "
                   "filter; bulk replays need --since or --created-after", _arguments,
         settings=OPERATOR_COMMAND)
def run_replay(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("replay", settings,
                       lambda api: _one(api, args) if args.id else _bulk(api, args),
                       tenant_uid=args.tenant)


def _one(api: LocalApi, args: argparse.Namespace) -> int:
    if args.dry_run:
        raise ApiFailure(BAD_USER_INPUT, "--dry-run is for a filter; give no delivery id")
    result = api.run(ONE, {"id": args.id}, idempotency_key=f"cli-{uuid.uuid4()}")
    result = result["replayDelivery"]
    if args.json:
        print_json(result)
    else:
        print(f"delivery {result['deliveryId']}: {result['action'].lower()}, generation "
              f"{result['replayGeneration']}, due {result['nextAttemptAt']}")
    return EXIT_OK


def _bulk(api: LocalApi, args: argparse.Namespace) -> int:
    filter = filter_of(args, api)
    preview = api.run(BULK, {"filter": filter, "dryRun": True,
                             "withTenant": api.platform})["replayDeliveries"]
    if args.dry_run:
        if args.json:
            print_json(preview)
            return EXIT_OK
        exact = "" if preview["wouldReplayIsExact"] else "about "
        print(f"dry run: {exact}{preview['wouldReplay']} deliveries would be replayed or "
              "expedited; nothing was changed")
        print_table(with_tenant(api, ["ID", "STATUS", "EVENT TYPE", "CONFIG", "CREATED"], 3),
                    [with_tenant(api, [d["id"], d["status"].lower(), d["eventType"],
                                       d["configName"], d["createdAt"]], 3, d)
                     for d in preview["sample"]])
        return EXIT_OK
    progress = Progress("replay", preview["wouldReplay"])
    totals = {"replayed": 0, "expedited": 0, "skipped": 0}
    after = None
    while True:
        page = api.run(BULK, {"filter": filter, "first": PAGE, "after": after, "dryRun": False},
                       idempotency_key=f"cli-{uuid.uuid4()}")["replayDeliveries"]
        for key in totals:
            totals[key] += len(page[key])
        detail = ", ".join(f"{count} {key}" for key, count in totals.items())
        progress.update(totals["replayed"] + totals["expedited"], detail)
        if not page["hasMore"]:
            break
        after = page["nextCursor"]
    progress.finish(detail)
    if args.json:
        print_json(totals)
    else:
        print(detail)
    return EXIT_OK


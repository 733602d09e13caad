"""The settings each command reads, and the argparse flags that set them."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from typing import Any

from service.runtime.settings import Settings, flag_name


def all_but(*names: str) -> tuple[str, ...]:
    """Every setting but `names`."""
    return tuple(spec.name for spec in dataclasses.fields(Settings) if spec.name not in names)


# A command lists the settings it reads when it registers; a new setting belongs to the
# worker and to dev unless it is listed as the web's or excluded there.
API_SETTINGS = ("database_url", "db_pool_size", "max_payload", "secret_rotation_grace",
                "allow_private_endpoints", "otlp_endpoint", "log_level")
WEB_ONLY_SETTINGS = ("port", "web_concurrency", "secret_rotation_grace",
                     "portal_frame_ancestors")
DATABASE_ONLY = ("database_url",)  # commands that run the API's operations on the database
# Commands that change things on an operator's behalf: the database, and where the audit
# trail of the changes goes (the servers log theirs with the rest of their log).
OPERATOR_COMMAND = ("database_url", "audit_log")
SERVER_EXCLUDED = ("audit_log",)  # settings of the operator commands only


def add_arguments(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """Add one flag per setting in `names` (all when None), plus the aliases of the former
    retry worker, to `parser`."""
    group = parser.add_argument_group("settings (each also read from its environment variable)")
    wanted = None if names is None else set(names)
    for spec in dataclasses.fields(Settings):
        if wanted is not None and spec.name not in wanted:
            continue
        meta = spec.metadata
        names = [f"--{flag_name(meta['env'])}", *meta["aliases"]]
        default = meta["default"] if meta["default"] is not None else "unset"
        group.add_argument(
            *dict.fromkeys(names),
            dest=spec.name,
            default=argparse.SUPPRESS,  # absent unless given, so nested parsers can share it
            metavar=meta["env"],
            help=f"{meta['help']} (default: {default})",
        )


def flags_from(namespace: argparse.Namespace) -> dict[str, Any]:
    """Return the settings flags given on the command line."""
    names = {spec.name for spec in dataclasses.fields(Settings)}
    return {k: v for k, v in vars(namespace).items() if k in names and v is not None}

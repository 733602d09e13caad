"""The subcommands of `webhooks`; importing this package registers them."""

from service.commands import (  # noqa: F401
    backfill,
    configs,
    deliveries,
    dev,
    migrate,
    replay,
    run,
    stats,
    tokens,
)

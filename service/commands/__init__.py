"""The subcommands of `webhooks`; importing this package registers them."""

from service.commands import backfill, dev, migrate, run, tokens  # noqa: F401

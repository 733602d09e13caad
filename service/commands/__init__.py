"""The subcommands of `webhooks`; importing this package registers them."""

from service.commands import migrate  # noqa: F401

"""`webhooks migrate`: apply pending migrations (idempotent, safe to run concurrently)."""

from __future__ import annotations

import argparse

from db.migrate import migrate
from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import DATABASE_ONLY
from service.runtime.settings import Settings


@command("migrate", "apply pending database migrations (idempotent, concurrency-safe)",
         settings=DATABASE_ONLY)
def run_migrate(args: argparse.Namespace, settings: Settings) -> int:
    settings.require_database_url()
    applied = migrate(settings.session_database_url, report=print,
                      pooler=settings.session_pooler)
    print(f"{len(applied)} migration(s) applied; schema is up to date")
    return EXIT_OK

"""`webhooks worker` and `webhooks web`: the two long-running processes."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from service.cli import command
from service.durations import format_duration
from service.logs import configure
from service.settings import Settings
from service.worker import Worker


@command("worker", "run the dispatcher, stale-claim recovery, retention and Kafka consumer")
def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    configure(settings.log_level)
    settings.require_database_url()
    return Worker(settings).run()


@command("web", "serve the GraphQL API with gunicorn's gevent worker on $PORT")
def run_web(args: argparse.Namespace, settings: Settings) -> int:
    settings.require_database_url()
    os.environ.update(_environment(settings))
    argv = [
        sys.executable, "-m", "gunicorn", "-k", "gevent", "--bind", f"0.0.0.0:{settings.port}",
        "--workers", str(settings.web_concurrency), "--no-control-socket",
        "--graceful-timeout", str(int(settings.shutdown_timeout)),
        "--access-logfile", "-", "wsgi:app",
    ]
    os.execv(sys.executable, argv)
    return 1  # not reached: exec replaces the process


def _environment(settings: Settings) -> dict[str, str]:
    """Return the settings given as flags as environment variables, for wsgi.py to read."""
    exported = {}
    for spec in dataclasses.fields(settings):
        value = getattr(settings, spec.name)
        if value is None or value == spec.default:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, tuple):
            text = ",".join(value)
        elif isinstance(value, float):
            text = format_duration(value)
        else:
            text = str(value)
        exported[spec.metadata["env"]] = text
    return exported

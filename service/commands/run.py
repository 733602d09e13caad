"""`webhooks worker` and `webhooks web`: the two long-running processes."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from service.commands.registry import EXIT_OK, command
from service.commands.setting_flags import (
    API_SETTINGS,
    SERVER_EXCLUDED,
    WEB_ONLY_SETTINGS,
    all_but,
)
from service.policy.durations import format_duration
from service.runtime import early_stop
from service.runtime.heap import freeze_startup_objects
from service.runtime.logs import configure
from service.runtime.settings import Settings
from service.runtime.startup import wait_for_database
from service.runtime.status_server import bound_socket
from service.worker import Worker


@command("worker", "run the dispatcher, stale-claim recovery, retention and Kafka consumer",
         settings=all_but(*WEB_ONLY_SETTINGS, *SERVER_EXCLUDED), warm_stop=True)
def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    configure(settings.log_level)
    if not wait_for_database(settings.require_database_url(), settings.startup_timeout,
                             stopped=early_stop.received):
        return EXIT_OK  # stopped before it started: nothing to hand back
    worker = Worker(settings)
    freeze_startup_objects()
    return worker.run()


@command("web", "serve the GraphQL API with gunicorn's gevent worker on $PORT",
         settings=(*API_SETTINGS, "port", "web_concurrency", "shutdown_timeout", "public_url",
                   "portal_frame_ancestors"))
def run_web(args: argparse.Namespace, settings: Settings) -> int:
    """Bind $PORT here, so that a taken port is one line naming it, then hand the socket to
    gunicorn (which would otherwise retry for 5 s and log each try)."""
    settings.require_database_url()
    listener = bound_socket("0.0.0.0", settings.port, "PORT")
    listener.set_inheritable(True)
    os.environ.update(_environment(settings))
    argv = [
        sys.executable, "-m", "gunicorn", "-k", "gevent", "--bind", f"fd://{listener.fileno()}",
        "--workers", str(settings.web_concurrency), "--no-control-socket",
        "--graceful-timeout", str(int(settings.shutdown_timeout)),
        "--logger-class", "service.web.weblog.GunicornLogger",
        "--log-level", settings.log_level,
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
        elif isinstance(value, frozenset):
            text = ",".join(map(str, sorted(value)))
        elif isinstance(value, float):
            text = format_duration(value)
        else:
            text = str(value)
        exported[spec.metadata["env"]] = text
    return exported

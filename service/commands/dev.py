"""`webhooks dev`: embedded PostgreSQL, migrations, web API, dashboard and worker in one process."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from pathlib import Path

import gevent
import gevent.event
from gevent.pywsgi import WSGIServer

from db import tokens
from db.errors import NotFound
from db.migrate import migrate
from db.pool import ConnectionPool
from service.commands.registry import EXIT_FAILED, EXIT_OK, EXIT_USAGE, command
from service.commands.setting_flags import SERVER_EXCLUDED, all_but
from service.local.kafka import LocalKafka, LocalKafkaError, LocalKafkaNotInstalled, tansu_binary
from service.local.postgres import (
    LocalPostgres,
    LocalPostgresError,
    LocalPostgresNotInstalled,
    dev_base,
    wheel_dirs,
)
from service.runtime.heap import freeze_startup_objects
from service.runtime.logs import configure
from service.runtime.settings import Settings
from service.runtime.status_server import start_listening
from service.runtime.telemetry import Telemetry
from service.web.app import create_app
from service.worker import Worker

DEV_TOKEN_NAME = "dev"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the embedded PostgreSQL keeps its data between runs "
                             "(default: .webhooks-dev in the current folder)")
    parser.add_argument("--kafka", action="store_true",
                        help="also run an embedded Kafka-protocol broker (tansu, in memory) "
                             "and consume events from it")


@command("dev", "run everything in one process on an embedded PostgreSQL", _arguments,
         # dev runs its own database and serves no separate metrics port
         settings=all_but("database_url", "metrics_port", "startup_timeout",
                          "web_concurrency", *SERVER_EXCLUDED))
def run_dev(args: argparse.Namespace, settings: Settings) -> int:
    configure(settings.log_level)
    try:  # the servers ship in the dev extra: say what to install before anything starts
        wheel_dirs()
        if args.kafka:
            tansu_binary()
    except (LocalPostgresNotInstalled, LocalKafkaNotInstalled) as error:
        say(f"webhooks dev: {error}")
        return EXIT_USAGE
    base = args.data_dir.resolve() if args.data_dir else dev_base(Path.cwd())
    say(f"starting PostgreSQL (data in {base}) ...")
    try:
        with contextlib.ExitStack() as servers:
            postgres = servers.enter_context(LocalPostgres(base=base))
            migrate(postgres.dsn)
            settings = settings.replace(database_url=postgres.dsn, metrics_port=0)
            if args.kafka:
                say("starting Kafka (tansu, in memory) ...")
                settings = _consume_from(servers.enter_context(LocalKafka()), settings)
            return _serve(settings, postgres)
    except (LocalPostgresError, LocalKafkaError) as error:
        say(f"webhooks dev: {error}")
        return EXIT_FAILED


def _consume_from(kafka: LocalKafka, settings: Settings) -> Settings:
    """Create the running broker's topics; return the settings that consume them.

    The broker forgets everything when it stops while the database is kept, so offsets
    start at 0 again each run: without KAFKA_TOPICS the topic is new each run, or an event
    without an id would be taken for the previous run's `<topic>:<partition>:<offset>`.
    """
    topics = settings.kafka_topics
    if topics == Settings().kafka_topics:
        topics = (time.strftime("webhooks-%Y%m%d-%H%M%S", time.gmtime()),)
    for topic in topics:
        kafka.create_topic(topic, partitions=1)
    return settings.replace(kafka_bootstrap_servers=kafka.bootstrap, kafka_topics=topics)


def _serve(settings: Settings, postgres: LocalPostgres) -> int:
    telemetry = Telemetry(otlp_endpoint=settings.otlp_endpoint, role="dev")
    pool = settings.connection_pool(size=settings.db_pool_size,
                                    application_name="webhooks-dev")
    token = _fresh_operator_token(pool)
    server = WSGIServer(("127.0.0.1", settings.port),
                        create_app(settings, pool=pool, telemetry=telemetry), log=None)
    start_listening(server, "PORT")
    worker = Worker(settings, telemetry=telemetry)
    worker.start()
    freeze_startup_objects()
    kafka = (f"  Kafka       {settings.kafka_bootstrap_servers}  topic "
             f"{','.join(settings.kafka_topics)}\n" if settings.kafka_bootstrap_servers else "")
    say(
        "\nwebhooks dev is running\n"
        f"  dashboard   http://127.0.0.1:{server.server_port}/  (sign in with the token)\n"
        f"  GraphQL     http://127.0.0.1:{server.server_port}/graphql\n"
        f"  token       {token}\n"
        "              (operator; send it as 'Authorization: Bearer <token>')\n"
        f"  PostgreSQL  {postgres.dsn}\n"
        f"{kafka}"
        f"  health      http://127.0.0.1:{server.server_port}/healthz\n"
        "Press Ctrl-C to stop.\n"
    )
    stop = gevent.event.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(signum, stop.set)
    stop.wait()
    say("stopping ...")
    server.stop(timeout=2)
    worker.stop()
    pool.close()
    say("stopped")
    return EXIT_OK


def _fresh_operator_token(pool: ConnectionPool) -> str:
    """Replace the dev token with a new one, since stored tokens cannot be shown again."""
    with contextlib.suppress(NotFound):
        tokens.revoke(pool, DEV_TOKEN_NAME)
    _, plain = tokens.create(pool, name=DEV_TOKEN_NAME, tenant_id=None, role="operator")
    return plain


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)

"""`webhooks dev`: embedded PostgreSQL, migrations, web API and worker in one process."""

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
from service.app import create_app
from service.cli import EXIT_FAILED, EXIT_OK, command
from service.local_kafka import LocalKafka, LocalKafkaError
from service.local_postgres import LocalPostgres, LocalPostgresError, dev_base
from service.logs import configure
from service.settings import Settings
from service.telemetry import Telemetry
from service.worker import Worker

DEV_TOKEN_NAME = "dev"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the embedded PostgreSQL keeps its data between runs "
                             "(default: .webhooks-dev in the current folder)")
    parser.add_argument("--kafka", action="store_true",
                        help="also run an embedded Kafka-protocol broker (tansu, in memory) "
                             "and consume events from it")


@command("dev", "run everything in one process on an embedded PostgreSQL", _arguments)
def run_dev(args: argparse.Namespace, settings: Settings) -> int:
    configure(settings.log_level)
    base = args.data_dir.resolve() if args.data_dir else dev_base(Path.cwd())
    postgres = LocalPostgres(base=base)
    say(f"starting PostgreSQL (data in {base}) ...")
    try:
        dsn = postgres.start()
    except LocalPostgresError as error:
        say(f"webhooks dev: {error}")
        return EXIT_FAILED
    kafka = LocalKafka() if args.kafka else None
    try:
        migrate(dsn)
        settings = settings.replace(database_url=dsn, metrics_port=0)
        if kafka:
            settings = _start_kafka(kafka, settings)
        return _serve(settings, postgres)
    except LocalKafkaError as error:
        say(f"webhooks dev: {error}")
        return EXIT_FAILED
    finally:
        if kafka:
            kafka.stop()
        postgres.stop()


def _start_kafka(kafka: LocalKafka, settings: Settings) -> Settings:
    """Start the broker and its topics; return the settings that consume them.

    The broker forgets everything when it stops while the database is kept, so offsets
    start at 0 again each run: without KAFKA_TOPICS the topic is new each run, or an event
    without an id would be taken for the previous run's `<topic>:<partition>:<offset>`.
    """
    say("starting Kafka (tansu, in memory) ...")
    kafka.start()
    topics = settings.kafka_topics
    if topics == Settings().kafka_topics:
        topics = (time.strftime("webhooks-%Y%m%d-%H%M%S", time.gmtime()),)
    for topic in topics:
        kafka.create_topic(topic, partitions=1)
    return settings.replace(kafka_bootstrap_servers=kafka.bootstrap, kafka_topics=topics)


def _serve(settings: Settings, postgres: LocalPostgres) -> int:
    telemetry = Telemetry(otlp_endpoint=settings.otlp_endpoint, role="dev")
    pool = ConnectionPool(settings.database_url, size=settings.db_pool_size,
                          application_name="webhooks-dev")
    token = _fresh_operator_token(pool)
    server = WSGIServer(("127.0.0.1", settings.port),
                        create_app(settings, pool=pool, telemetry=telemetry), log=None)
    server.start()
    worker = Worker(settings, telemetry=telemetry)
    worker.start()
    kafka = (f"  Kafka       {settings.kafka_bootstrap_servers}  topic "
             f"{','.join(settings.kafka_topics)}\n" if settings.kafka_bootstrap_servers else "")
    say(
        "\nwebhooks dev is running\n"
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
    _, plain = tokens.create(pool, name=DEV_TOKEN_NAME, role="operator")
    return plain


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)

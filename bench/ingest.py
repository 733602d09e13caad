"""Kafka ingest throughput: events and deliveries stored per second from a pre-filled topic.

`python -m bench.ingest` (or the `ingest` scenario of `python -m bench`) starts an embedded
PostgreSQL (durable: fsync and synchronous commit on, unless --fast-unsafe) and a tansu
broker, fills one topic with --events messages, then, for each fan-out, runs the real
consumer (service.ingest.consumer.Consumer, the worker's, in this process; no dispatcher competes)
in a new group on a new database until every message is stored. The clock runs from the
first batch stored to the last, so the group join is not counted. Prints a table; writes
JSON to --output.
"""

from service.patch import patch

patch()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
from kafka import KafkaProducer  # noqa: E402

from bench.scenarios import Sizes  # noqa: E402
from db import configs  # noqa: E402
from db.adhoc import fresh_database  # noqa: E402
from db.pool import ConnectionPool  # noqa: E402
from db.scope import DEFAULT_TENANT_ID  # noqa: E402
from service.ingest.consumer import Consumer  # noqa: E402
from service.local.kafka import LocalKafka  # noqa: E402
from service.local.ports import reserve_port  # noqa: E402
from service.local.postgres import temporary_postgres  # noqa: E402
from service.local.processes import ROOT, peak_rss_mb  # noqa: E402
from service.runtime.settings import Settings  # noqa: E402
from service.runtime.telemetry import Telemetry  # noqa: E402

EVENT_TYPE = "bench.event"
RESULTS = Path(__file__).resolve().parent / "results" / "ingest.json"
NOWHERE = "http://127.0.0.1:9/hook"  # never called: no dispatcher runs
SESSION_TIMEOUT = 2.0  # seconds; a short session makes the (untimed) group join quick
TOPIC = "bench-events"
FAN_OUTS = Sizes.ingest_fan_outs  # the defaults of `python -m bench`
BATCH_SIZE = 500  # the default of WEBHOOKS_KAFKA_BATCH_SIZE
PARTITIONS = 4
PAYLOAD_BYTES = 100


def scenario(sizes) -> dict:
    """Ingest `sizes.deliveries` messages at each of `sizes.ingest_fan_outs`; return one
    result per fan-out.

    It runs as `python -m bench.ingest` in a process of its own, with its own durable
    PostgreSQL and broker, so the peak memory it reports is that of an ingesting
    consumer alone.
    """
    events = sizes.deliveries
    batch_size = min(BATCH_SIZE, max(10, events // 20))  # several batches even when --quick
    with tempfile.TemporaryDirectory(prefix="webhooks-ingest-") as folder:
        output = Path(folder) / "ingest.json"
        subprocess.run([sys.executable, "-m", "bench.ingest", "--events", str(events),
                        "--fan-outs", ",".join(map(str, sizes.ingest_fan_outs)),
                        "--batch-size", str(batch_size), "--output", str(output)],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        runs = json.loads(output.read_text())["runs"]
    return {f"ingest_fan_out_{run['fan_out']}": run for run in runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="messages in the topic")
    parser.add_argument("--fan-outs", default=",".join(map(str, FAN_OUTS)),
                        help="comma-separated configs per event type, one run each")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="WEBHOOKS_KAFKA_BATCH_SIZE of the consumer")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--payload-bytes", type=int, default=PAYLOAD_BYTES,
                        help="size of the text field in each payload")
    parser.add_argument("--fast-unsafe", action="store_true",
                        help="PostgreSQL with fsync and synchronous_commit off")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    fan_outs = [int(part) for part in args.fan_outs.split(",") if part.strip()]

    with temporary_postgres(fast_unsafe=args.fast_unsafe) as pg, \
            LocalKafka(port=reserve_port()) as broker:
        broker.create_topic(TOPIC, args.partitions)
        started = time.monotonic()
        _fill(broker, TOPIC, args.events, args.payload_bytes)
        fill_seconds = time.monotonic() - started
        print(f"topic filled: {args.events:,} messages in {fill_seconds:.1f} s "
              f"({args.events / fill_seconds:,.0f}/s)", file=sys.stderr)
        runs = [_run(pg, broker, args.events, args.batch_size, fan_out) for fan_out in fan_outs]

    result = {
        "benchmark": "kafka ingest",
        "events": args.events,
        "partitions": args.partitions,
        "batch_size": args.batch_size,
        "payload_bytes": args.payload_bytes,
        "durable_postgres": not args.fast_unsafe,
        "runs": runs,
    }
    print(f"{'fan-out':>8} {'events/s':>10} {'deliveries/s':>13} {'seconds':>8} {'batches':>8}")
    for run in runs:
        print(f"{run['fan_out']:>8} {run['per_second']:>10,.0f} "
              f"{run['deliveries_per_second']:>13,.0f} {run['seconds']:>8.2f} "
              f"{run['batches']:>8}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.output}", file=sys.stderr)
    return 0


def _fill(broker: LocalKafka, topic: str, events: int, payload_bytes: int) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20,
                             batch_size=256 * 1024)
    text = "x" * payload_bytes
    for n in range(events):
        value = json.dumps({"type": EVENT_TYPE, "payload": {"n": n, "text": text}}).encode()
        producer.send(topic, value, key=str(n).encode())
    producer.flush(timeout=120)
    producer.close()


def _run(pg, broker: LocalKafka, events: int, batch_size: int, fan_out: int) -> dict:
    """Consume the whole topic in a new group into a new database; return the rates."""
    dsn = fresh_database(pg.dsn, f"ingest_fan_out_{fan_out}")
    pool = ConnectionPool(dsn, size=2, application_name="bench-ingest")
    for _ in range(fan_out):
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=NOWHERE, event_types=[EVENT_TYPE])
    settings = Settings.load({}, {"database_url": dsn}).replace(
        kafka_bootstrap_servers=broker.bootstrap, kafka_topics=(TOPIC,),
        kafka_group_id=f"bench-{fan_out}-{time.monotonic_ns()}", kafka_batch_size=batch_size,
        kafka_session_timeout=SESSION_TIMEOUT)
    consumer = Consumer(pool, settings, telemetry=Telemetry(role="bench"), name="bench")
    _reset_peak_rss()  # the filling producer's memory is not the consumer's
    consumer.start()
    progress = consumer.progress
    while progress.batches == 0:
        gevent.sleep(0.001)
    first_at, first_messages = time.monotonic(), progress.messages
    while progress.messages < events:
        gevent.sleep(0.001)
    seconds = time.monotonic() - first_at
    consumer.stop()
    timed = events - first_messages
    with pool.transaction() as cursor:
        cursor.execute("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM deliveries)")
        stored_events, stored_deliveries = cursor.fetchone()
    pool.close()
    if (stored_events, stored_deliveries) != (events, events * fan_out):
        raise RuntimeError(f"fan-out {fan_out}: stored {stored_events} events and "
                           f"{stored_deliveries} deliveries, expected {events} and "
                           f"{events * fan_out}")
    return {
        "per_second": round(timed / seconds, 1) if timed else None,  # events
        "deliveries_per_second": round(timed * fan_out / seconds, 1) if timed else None,
        "fan_out": fan_out,
        "events": events,
        "timed_events": timed,
        "seconds": round(seconds, 3),
        "batches": progress.batches,
        "batch_size": batch_size,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _reset_peak_rss() -> None:
    """Start the peak-memory count afresh (Linux: /proc/self/clear_refs, value 5)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mb() -> float | None:
    peak = peak_rss_mb(os.getpid())
    return None if peak is None else round(peak, 1)


if __name__ == "__main__":
    sys.exit(main())

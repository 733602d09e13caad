"""Peers measured in the same run: the same job done with Celery and with procrastinate.

Their packages are the `bench` extra (pip install -e '.[dev,bench]'), imported only here and
in the peers' own processes; `missing_packages()` says which are not installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from bench import environment as env
from bench.peer_task import CREATE_TABLE
from db.adhoc import fresh_database, sql
from service.local.ports import reserve_port
from service.local.processes import ROOT, peak_rss_mb

PACKAGES = ("celery", "redis", "procrastinate")  # the `bench` extra of setup.cfg
INSTALL = "pip install -e '.[dev,bench]'"
BODY = json.dumps({"id": "evt", "type": env.EVENT_TYPE, "timestamp": "2026-01-01T00:00:00Z",
                   "data": {"n": 1, "text": "x" * 100}})


def missing_packages() -> list[str]:
    """Return the packages of the `bench` extra that are not installed."""
    return [name for name in PACKAGES if importlib.util.find_spec(name) is None]


def run(pg, sizes) -> dict:
    results = {}
    dsn = fresh_database(pg.dsn, "peers")
    sql(dsn, CREATE_TABLE)
    with env.receiver() as url:
        with redis_url() as redis:
            if redis is None:
                results["celery"] = {"skipped": "no Redis on 127.0.0.1:6379 and no redis-server"}
            else:
                results["celery"] = _measure(dsn, sizes, _celery(dsn, redis, url, sizes))
        sql(dsn, "TRUNCATE peer_attempts")
        results["procrastinate"] = _measure(dsn, sizes, _procrastinate(dsn, url, sizes))
    return results


def _measure(dsn: str, sizes, started_worker) -> dict:
    with started_worker as process:
        result = _rate(dsn, sizes)
        result["peak_rss_mb"] = peak_rss_mb(process.pid)
    return result


def _rate(dsn: str, sizes) -> dict:
    def done():
        return sql(dsn, "SELECT count(*) FROM peer_attempts")[0][0]

    deadline = time.monotonic() + max(sizes.seconds * 6, 60)
    while done() < sizes.warmup and time.monotonic() < deadline:
        time.sleep(0.2)
    first, t0 = done(), time.monotonic()
    while done() < sizes.peer_tasks and time.monotonic() < deadline:
        time.sleep(0.2)
    last, elapsed = done(), time.monotonic() - t0
    return {"per_second": round((last - first) / elapsed, 1) if elapsed else 0.0,
            "deliveries": last - first, "seconds": round(elapsed, 3)}


@contextlib.contextmanager
def redis_url():
    """Yield a Redis URL: the local server if one answers, else a private redis-server."""
    import redis

    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1).ping()
        yield "redis://127.0.0.1:6379/15"
        return
    except redis.RedisError:
        pass
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port = reserve_port()
    process = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield f"redis://127.0.0.1:{port}/15"
    finally:
        process.terminate()
        process.wait(10)


@contextlib.contextmanager
def _celery(dsn: str, redis: str, url: str, sizes):
    import redis as redis_client

    redis_client.Redis.from_url(redis).flushdb()
    os.environ["BENCH_REDIS_URL"] = redis
    from bench.peers_celery import app

    with app.connection_for_write() as connection:
        producer = app.amqp.Producer(connection)
        for n in range(sizes.peer_tasks):
            app.send_task("deliver", args=[f"c{n}", url, BODY], producer=producer)
    env_vars = {**os.environ, "BENCH_PEER_DSN": dsn, "BENCH_REDIS_URL": redis}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bench.peers_celery", "worker", "-P", "gevent",
         "-c", str(sizes.concurrency), "--loglevel", "WARNING", "--without-gossip",
         "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env_vars, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        _stop(process)


@contextlib.contextmanager
def _procrastinate(dsn: str, url: str, sizes):
    env_vars = {**os.environ, "BENCH_PEER_DSN": dsn}
    command = [sys.executable, "-m", "procrastinate", "--app", "bench.peers_procrastinate.app"]
    subprocess.run([*command, "schema", "--apply"], cwd=ROOT, env=env_vars, check=True,
                   capture_output=True)
    subprocess.run(
        [sys.executable, "-c", _DEFER.format(count=sizes.peer_tasks, url=url, body=BODY)],
        cwd=ROOT, env=env_vars, check=True,
    )
    process = subprocess.Popen(
        [*command, "worker", "--concurrency", str(sizes.concurrency)],
        cwd=ROOT, env=env_vars, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        _stop(process)


_DEFER = """
from bench.peers_procrastinate import app, deliver
with app.open():
    deliver.batch_defer(*[dict(delivery_id=f"p{{n}}", endpoint={url!r}, body={body!r})
                          for n in range({count})])
"""


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

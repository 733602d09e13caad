"""The Celery peer: `celery -A bench.peers_celery worker -P gevent -c 50` (Redis broker)."""

import os

from celery import Celery
from celery.signals import worker_init

app = Celery("bench_peer", broker=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15"))
app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=4, task_acks_late=False,
                broker_connection_retry_on_startup=True)


@worker_init.connect
def _patch_psycopg(**kwargs):
    from psycogreen.gevent import patch_psycopg

    patch_psycopg()


@app.task(name="deliver")
def deliver(delivery_id: str, endpoint: str, body: str) -> int:
    from bench.peer_task import deliver as run

    return run(delivery_id, endpoint, body)

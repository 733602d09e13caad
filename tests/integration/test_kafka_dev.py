"""`webhooks dev --kafka`: an embedded broker whose events reach a configured endpoint."""

import json
import signal
import subprocess
import sys

from db import configs
from db.pool import ConnectionPool
from db.scope import DEFAULT_TENANT_ID
from service.local.kafka import LocalKafka
from service.local.ports import reserve_port
from tests.helpers import PATIENCE
from tests.integration.test_dev import world_readable_tmp  # noqa: F401  (fixture)
from tests.kafka import SESSION_TIMEOUT, Topic


def _banner(process):
    """Return the lines `webhooks dev` prints up to "Press Ctrl-C", by their first word."""
    fields = {}
    for line in process.stderr:
        words = line.split()
        if words and not line.startswith("{"):
            fields[words[0]] = words[1:]
        if "Press Ctrl-C" in line:
            return fields
    raise AssertionError(f"webhooks dev exited early: {fields}")


def test_dev_kafka_prints_the_broker_and_ingests_what_is_produced(
        world_readable_tmp, receiver):  # noqa: F811
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "dev", "--kafka", "--data-dir",
         str(world_readable_tmp / "dev"), "--port", str(reserve_port()),
         "--kafka-session-timeout", f"{SESSION_TIMEOUT}s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        banner = _banner(process)
        bootstrap, topic_word, topic_name = banner["Kafka"]
        assert topic_word == "topic"
        pool = ConnectionPool(banner["PostgreSQL"][0], size=1)
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=receiver.url, event_types=["hello"])
        pool.close()

        topic = Topic(LocalKafka(port=int(bootstrap.rsplit(":", 1)[1])), topic_name)
        topic.send({"type": "hello", "payload": {"from": "a newcomer"}})
        topic.close()
        (request,) = receiver.wait_for(1)
        body = json.loads(request.body)
        assert (body["type"], body["data"]) == ("hello", {"from": "a newcomer"})
        assert body["id"] == f"{topic_name}:0:0"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err[-2000:]

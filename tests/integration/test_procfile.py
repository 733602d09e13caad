"""The Procfile's processes, started by honcho against a real database, deliver an event."""

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import requests

from db import events
from service.local_postgres import free_port
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _procfile():
    entries = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.strip():
            name, _, command = line.partition(":")
            entries[name.strip()] = command.strip()
    return entries


def _environment(empty_database_url, port):
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "DATABASE_URL": empty_database_url,
        "PORT": str(port),
        "WEB_CONCURRENCY": "1",
        "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true",
        "WEBHOOKS_METRICS_PORT": str(free_port()),
        "WEBHOOKS_LOG_LEVEL": "warning",
    }


def test_procfile_declares_release_web_and_worker():
    assert set(_procfile()) == {"release", "web", "worker"}


def test_honcho_runs_the_procfile_and_a_delivery_arrives(empty_database_url, receiver,
                                                          tmp_path):
    port = free_port()
    env = _environment(empty_database_url, port)
    release = subprocess.run(shlex.split(_procfile()["release"]), env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert release.returncode == 0, release.stderr
    honcho = subprocess.Popen(
        [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile"), "start", "web",
         "worker"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _up(f"http://127.0.0.1:{port}/readyz"), timeout=30)
        from db import configs
        from db.pool import ConnectionPool
        pool = ConnectionPool(empty_database_url, size=1)
        configs.create(pool, endpoint=receiver.url, event_types=["procfile.test"])
        events.publish(pool, events.new_event("evt-procfile", "procfile.test", {"ok": True},
                                              max_payload=1000))
        pool.close()
        (request,) = receiver.wait_for(1, timeout=30)
        assert b"evt-procfile" in request.body
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        output, _ = honcho.communicate(timeout=60)
    assert b"Traceback" not in output, output.decode()[-3000:]


def _up(url):
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.ConnectionError:
        return False

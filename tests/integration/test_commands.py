"""The `webhooks` commands at start: settings they list, and one clear line when they cannot run.

Each case runs the real command and reads what it prints: one line naming the setting at
fault, the documented exit code, never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from service.cli import build_parser
from service.commands.registry import COMMANDS
from service.local.ports import reserve_port
from service.runtime.settings import Settings
from tests.helpers import PATIENCE
from tests.integration.test_dev import world_readable_tmp  # noqa: F401  (fixture)


def _run(*argv: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if key != "DATABASE_URL" and not key.startswith(("WEBHOOKS_", "KAFKA_"))}
    return subprocess.run([sys.executable, "-m", "service", *argv],
                          env={**environment, "WEBHOOKS_LOG_LEVEL": "info", **env},
                          capture_output=True, text=True, timeout=PATIENCE)


def _plain_lines(text: str) -> list[str]:
    """Return the lines that are not JSON log lines."""
    lines = []
    for line in text.splitlines():
        try:
            json.loads(line)
        except ValueError:
            if line.strip():
                lines.append(line)
    return lines


@pytest.fixture
def taken_port():
    """A port something else listens on (all addresses)."""
    with socket.socket() as blocker:
        blocker.bind(("0.0.0.0", 0))
        blocker.listen()
        yield blocker.getsockname()[1]


def test_every_setting_belongs_to_a_command_and_every_command_lists_its_own():
    build_parser()  # registers the commands
    used = {name for registered in COMMANDS.values() for name in registered.settings}
    assert used == {spec.name for spec in dataclasses.fields(Settings)}


@pytest.mark.parametrize(
    ("command", "listed", "absent"),
    [
        ("migrate", ["--database-url"], ["--min-backoff", "--port", "--kafka-topics"]),
        ("worker", ["--min-backoff", "--metrics-port", "--kafka-topics", "--startup-timeout",
                    "--retryable-status-codes"], ["--port", "--web-concurrency"]),
        ("web", ["--port", "--web-concurrency", "--database-url"],
         ["--min-backoff", "--kafka-topics", "--metrics-port"]),
        ("dev", ["--port", "--min-backoff", "--kafka-topics"],
         ["--database-url", "--metrics-port", "--web-concurrency"]),
        ("tokens", ["--database-url"], ["--min-backoff", "--port"]),
        ("backfill-deliveries", ["--database-url", "--retention-failed"],
         ["--min-backoff", "--port"]),
    ],
)
def test_help_lists_the_settings_the_command_uses_and_no_others(command, listed, absent,
                                                                 capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"])
    assert exited.value.code == 0
    help_text = capsys.readouterr().out
    for flag in listed:
        assert flag in help_text, flag
    for flag in absent:
        assert flag not in help_text, flag


def test_a_malformed_database_url_exits_2_with_one_line():
    result = _run("worker", DATABASE_URL="mysql://user:hunter2@db/app")
    assert result.returncode == 2
    (line,) = _plain_lines(result.stderr)
    assert line.startswith("webhooks worker: DATABASE_URL: not a PostgreSQL connection string")
    assert "hunter2" not in result.stderr and "Traceback" not in result.stderr


def test_a_worker_without_its_database_retries_then_exits_3_without_a_traceback():
    result = _run("worker", DATABASE_URL=f"postgresql://nobody@127.0.0.1:{reserve_port()}/none",
                  WEBHOOKS_STARTUP_TIMEOUT="2s", WEBHOOKS_METRICS_PORT="0")
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    retries = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert retries and all(line["message"] == "database unreachable; retrying"
                           and "exception" not in line for line in retries)
    (last,) = _plain_lines(result.stderr)
    assert last.startswith("webhooks worker: database unreachable: ")
    assert "gave up after WEBHOOKS_STARTUP_TIMEOUT=2s" in last


def test_a_worker_whose_metrics_port_is_taken_names_the_setting(database_url, taken_port):
    result = _run("worker", DATABASE_URL=database_url, WEBHOOKS_METRICS_PORT=str(taken_port))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = _plain_lines(result.stderr)
    assert line.startswith(f"webhooks worker: WEBHOOKS_METRICS_PORT: port {taken_port} ")
    assert "already in use" in line


def test_web_on_a_taken_port_says_so_in_one_line_naming_the_setting(database_url, taken_port):
    result = _run("web", DATABASE_URL=database_url, PORT=str(taken_port))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()  # gunicorn never started: none of its log lines
    assert line.startswith(f"webhooks web: PORT: port {taken_port} ")
    assert "already in use" in line


def test_dev_on_a_taken_port_names_the_setting(world_readable_tmp, taken_port):  # noqa: F811
    result = _run("dev", "--data-dir", str(world_readable_tmp / "dev"), "--port",
                  str(taken_port))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [line for line in _plain_lines(result.stderr) if "in use" in line]
    assert line.startswith(f"webhooks dev: PORT: port {taken_port} ")
    assert not (world_readable_tmp / "dev" / "pgdata" / "postmaster.pid").exists()


def test_a_sigterm_while_a_worker_waits_for_its_database_exits_0_at_once():
    environment = {key: value for key, value in os.environ.items()
                   if key != "DATABASE_URL" and not key.startswith(("WEBHOOKS_", "KAFKA_"))}
    worker = subprocess.Popen(
        [sys.executable, "-m", "service", "worker"], stderr=subprocess.PIPE, text=True,
        env={**environment, "DATABASE_URL": f"postgresql://nobody@127.0.0.1:{reserve_port()}/x",
             "WEBHOOKS_STARTUP_TIMEOUT": "1h", "WEBHOOKS_METRICS_PORT": "0"})
    try:
        first = worker.stderr.readline()  # the first retry line: it is waiting now
        assert json.loads(first)["message"] == "database unreachable; retrying"
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=PATIENCE)  # long before the hour is up
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, err
    assert "Traceback" not in err

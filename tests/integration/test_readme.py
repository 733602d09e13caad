"""The README's commands and its example receiver work as written."""

import ast
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import gevent

from service.local.ports import reserve_port
from tests.helpers import PATIENCE, wait_until
from tests.integration.test_dev import world_readable_tmp  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_first_screen_gives_exactly_two_commands():
    first_screen = README[:README.index("## What it does")]
    commands = _blocks("sh")[:2]
    assert len(re.findall(r"```sh\n", first_screen)) == 2
    assert commands[0].strip().endswith("webhooks dev")
    assert commands[1].strip().endswith("python -m pytest -n 2")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _blocks("sh")[1].strip()
    assert test_command in (ROOT / ".ci" / "run").read_text()


def _section(title):
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def test_try_it_gives_the_receiver_its_secret_before_publishing():
    steps = _section("Try it")
    created = steps.index("createConfig(")
    receiver = steps.index("WEBHOOK_SECRET=whsec_")
    published = steps.index("publishEvent(")
    assert created < receiver < published
    assert "pip install standardwebhooks" in steps[created:receiver + 200]


def test_the_example_receiver_needs_only_the_standard_library_and_standardwebhooks():
    (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
    imported = set()
    for node in ast.walk(ast.parse(receiver_code)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"standardwebhooks"}


def test_the_example_receiver_verifies_a_real_delivery(make, start_worker, tmp_path):
    (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
    script = tmp_path / "receiver.py"
    script.write_text(receiver_code)
    port = reserve_port()
    config = make.config(endpoint=f"http://127.0.0.1:{port}/hook")
    env = {**os.environ, "WEBHOOK_SECRET": make.secrets[config.id],
           "RECEIVER_PORT": str(port)}
    receiver = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, text=True)
    try:
        _, (delivery_id,) = make.event(payload={"order": 42})
        start_worker(min_backoff=0.2, max_backoff=0.2)
        wait_until(lambda: make.row(delivery_id)["status"] == "succeeded")
    finally:
        receiver.terminate()
        output, _ = receiver.communicate(timeout=PATIENCE)
    webhook_id = make.row(delivery_id)["webhook_id"]
    assert f"received {webhook_id} order.created {{'order': 42}}" in output
    assert make.row(delivery_id)["last_status_code"] == 204


def test_the_example_receiver_rejects_a_forged_request(make, start_worker, tmp_path):
    (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
    script = tmp_path / "receiver.py"
    script.write_text(receiver_code)
    port = reserve_port()
    make.config(endpoint=f"http://127.0.0.1:{port}/hook")
    env = {**os.environ, "WEBHOOK_SECRET": "whsec_" + "QUJD" * 8,
           "RECEIVER_PORT": str(port)}
    receiver = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, text=True)
    try:
        _, (delivery_id,) = make.event()
        start_worker(min_backoff=0.2, max_backoff=0.2)
        row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r)
    finally:
        receiver.terminate()
        receiver.communicate(timeout=PATIENCE)
    assert row["last_status_code"] == 400


def test_try_it_works_as_pasted_against_webhooks_dev(world_readable_tmp, tmp_path):  # noqa: F811
    """Run the Try-it steps in order, only with the ports, the token and the secret filled in."""
    dev_port, receiver_port = reserve_port(), reserve_port()
    create, receiver_step, publish = re.findall(r"```sh\n(.*?)```", _section("Try it"),
                                                re.DOTALL)
    dev = subprocess.Popen(
        [sys.executable, "-m", "service", "dev", "--data-dir", str(world_readable_tmp / "dev"),
         "--port", str(dev_port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    receiver = None
    try:
        token = _printed_token(dev)

        def paste(block):
            block = block.replace(":8000/", f":{dev_port}/").replace(":9000/", f":{receiver_port}/")
            lines = [line for line in block.splitlines() if not line.startswith("export TOKEN=")]
            result = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True,
                                    text=True, timeout=PATIENCE, env={**os.environ, "TOKEN": token})
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        secret = paste(create)["data"]["createConfig"]["secret"]
        assert "receiver.py" in receiver_step and "standardwebhooks" in receiver_step
        (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
        (tmp_path / "receiver.py").write_text(receiver_code)
        receiver = subprocess.Popen(
            [sys.executable, "receiver.py"], cwd=tmp_path, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "WEBHOOK_SECRET": secret, "RECEIVER_PORT": str(receiver_port)})
        wait_until(lambda: socket.create_connection(("127.0.0.1", receiver_port), 1).close()
                   or True)
        event_id = paste(publish)["data"]["publishEvent"]["eventId"]
        with gevent.Timeout(PATIENCE):
            line = receiver.stdout.readline()
        assert line.startswith("received ") and "order.created {'order': 42}" in line, line
        assert event_id
    finally:
        for process in (receiver, dev):
            if process is not None:
                process.send_signal(signal.SIGTERM if process is dev else signal.SIGKILL)
                process.communicate(timeout=PATIENCE)


def _printed_token(dev):
    """Return the token `webhooks dev` prints, reading its banner up to "Press Ctrl-C"."""
    token = None
    with gevent.Timeout(PATIENCE):
        for line in dev.stderr:
            if line.strip().startswith("token"):
                token = line.split()[1]
            if "Press Ctrl-C" in line:
                return token
    raise AssertionError(f"webhooks dev exited with {dev.wait()} before it was ready")

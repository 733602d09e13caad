"""The README's commands and its example receiver work as written."""

import os
import re
import subprocess
import sys
from pathlib import Path

from service.local_postgres import free_port
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_first_screen_gives_exactly_two_commands():
    first_screen = README[:README.index("## What it does")]
    commands = _blocks("sh")[:2]
    assert len(re.findall(r"```sh\n", first_screen)) == 2
    assert commands[0].strip().endswith("webhooks dev")
    assert commands[1].strip().endswith("python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _blocks("sh")[1].strip()
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_the_example_receiver_verifies_a_real_delivery(make, start_worker, tmp_path):
    (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
    script = tmp_path / "receiver.py"
    script.write_text(receiver_code)
    port = free_port()
    config = make.config(endpoint=f"http://127.0.0.1:{port}/hook")
    env = {**os.environ, "WEBHOOK_SECRET": make.secrets[config.id],
           "RECEIVER_PORT": str(port), "PYTHONPATH": str(ROOT)}
    receiver = subprocess.Popen([sys.executable, str(script)], env=env,
                                stdout=subprocess.PIPE, text=True)
    try:
        _, (delivery_id,) = make.event(payload={"order": 42})
        start_worker(min_backoff=0.2, max_backoff=0.2)
        wait_until(lambda: make.row(delivery_id)["status"] == "succeeded", timeout=20)
    finally:
        receiver.terminate()
        output, _ = receiver.communicate(timeout=10)
    assert f"received {delivery_id} order.created {{'order': 42}}" in output
    assert make.row(delivery_id)["last_status_code"] == 204


def test_the_example_receiver_rejects_a_forged_request(make, start_worker, tmp_path):
    (receiver_code,) = [b for b in _blocks("python") if "class Receiver" in b]
    script = tmp_path / "receiver.py"
    script.write_text(receiver_code)
    port = free_port()
    make.config(endpoint=f"http://127.0.0.1:{port}/hook")
    env = {**os.environ, "WEBHOOK_SECRET": "whsec_" + "QUJD" * 8,
           "RECEIVER_PORT": str(port), "PYTHONPATH": str(ROOT)}
    receiver = subprocess.Popen([sys.executable, str(script)], env=env,
                                stdout=subprocess.PIPE, text=True)
    try:
        _, (delivery_id,) = make.event()
        start_worker(min_backoff=0.2, max_backoff=0.2)
        row = wait_until(lambda: (r := make.row(delivery_id))["status"] == "failed" and r,
                         timeout=20)
    finally:
        receiver.terminate()
        receiver.communicate(timeout=10)
    assert row["last_status_code"] == 400

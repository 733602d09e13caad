"""The portal's Node verification snippet, run as written by Node.js with the Standard Webhooks
library from the npm registry: it accepts a request the service signs and refuses a forged one.

Node.js and npm are not part of a fresh Python machine: without them the test is skipped
(failed under CI, which installs them). The library is installed once into a cache folder
shared by every run and worker (`npm install` under a file lock)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from db.vocabulary import SECRET_PREFIX
from service.local.ports import reserve_port
from service.policy.signing import headers as signed_headers
from service.web.portal import PORTAL_DIR

LIBRARY = "standardwebhooks@1.3.0"
SECRET = SECRET_PREFIX + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
LISTENING = "listening"


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The folder holding the Standard Webhooks library for Node."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not installed: the Node snippet is not run"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run it (.ci/run installs Node.js)")
        pytest.skip(reason)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    folder = cache / "webhooks-tests" / LIBRARY.replace("@", "-")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "node_modules" / "standardwebhooks" / "package.json").exists():
            subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund",
                            "--prefix", str(folder), LIBRARY],
                           check=True, capture_output=True, timeout=300)
    return folder / "node_modules"


@pytest.fixture
def node_receiver(node_modules, tmp_path) -> Iterator[str]:
    """The snippet running in Node on a free port of 127.0.0.1; yields its address."""
    source = (PORTAL_DIR / "snippets" / "node.txt").read_text()
    port = reserve_port()
    assert "whsec_YOUR_ENDPOINT_SECRET" in source and ".listen(3000);" in source
    program = (source.replace("whsec_YOUR_ENDPOINT_SECRET", SECRET)
               .replace(".listen(3000);",
                        f'.listen({port}, "127.0.0.1", () => console.log("{LISTENING}"));'))
    (tmp_path / "node_modules").symlink_to(node_modules)
    (tmp_path / "receiver.mjs").write_text(program)
    process = subprocess.Popen(["node", "receiver.mjs"], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        first = process.stdout.readline().strip()
        assert first == LISTENING, first + process.stdout.read()
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.kill()
        process.wait()


def test_the_node_snippet_verifies_a_signed_request_and_refuses_a_forged_one(node_receiver):
    body = (b'{"id":"evt_1","type":"order.created","timestamp":"2026-01-01T00:00:00.000Z",'
            b'"data":{"order":1}}')
    sent = signed_headers([SECRET], "msg_1", int(time.time()), body)
    assert requests.post(node_receiver, data=body, headers=sent, timeout=30).status_code == 204
    forged = signed_headers([SECRET_PREFIX + "b3RoZXItc2VjcmV0LW9mLTI0LWJ5dGVzIQ=="], "msg_1",
                            int(time.time()), body)
    assert requests.post(node_receiver, data=body, headers=forged, timeout=30).status_code == 400
    stale = signed_headers([SECRET], "msg_2", int(time.time()) - 3600, body)
    assert requests.post(node_receiver, data=body, headers=stale, timeout=30).status_code == 400

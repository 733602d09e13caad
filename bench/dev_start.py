"""How long `webhooks dev` takes to answer /healthz: `python -m bench.dev_start [--runs N]`.

The first run starts on a folder it has never seen (initdb, migrations); the later ones reuse
it. Prints the seconds of each run; the target is a first start within 15 s.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from service.local.ports import reserve_port

TARGET_FIRST_START = 15.0  # seconds from launch to a healthy /healthz on a new folder
GIVE_UP = 300.0  # seconds after which a run counts as failed


def time_to_healthy(data_dir: Path) -> float:
    """Start `webhooks dev` on `data_dir`; return the seconds until /healthz answers 200."""
    port = reserve_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "dev", "--data-dir", str(data_dir), "--port",
         str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.monotonic() - started < GIVE_UP:
            if process.poll() is not None:
                raise SystemExit(f"webhooks dev exited with {process.returncode}")
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok:
                    return time.monotonic() - started
            except requests.RequestException:
                time.sleep(0.05)
        raise SystemExit(f"webhooks dev was not healthy within {GIVE_UP:.0f}s")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(GIVE_UP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="starts to time (default: 3)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="webhooks-dev-bench-"))
    base.chmod(0o755)  # reachable by the unprivileged PostgreSQL user when run as root
    try:
        for run in range(1, args.runs + 1):
            seconds = time_to_healthy(base / "dev")
            kind = "first start" if run == 1 else "restart"
            verdict = f" (target {TARGET_FIRST_START:.0f}s)" if run == 1 else ""
            print(f"run {run}: {kind} healthy in {seconds:.2f}s{verdict}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

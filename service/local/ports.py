"""TCP ports for the servers that tests and benchmarks start, never picked twice.

A port that `bind(0)` found free is nobody's until the server binds it; meanwhile the kernel
may give it to any outgoing connection of the machine as its local port (both draw from the
ephemeral range), and another run's search may pick it too. So ports come from below the
ephemeral range, where no outgoing connection lands, and each is claimed with a lock file
held until this process ends: a run beside this one skips it, and this process never hands
it out twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

LOCKS = Path(tempfile.gettempdir()) / "webhooks-test-ports"
LOWEST = 20_000  # below it, well-known services (PostgreSQL on 5432, brokers, caches) listen
DEFAULT_EPHEMERAL_START = 32_768  # Linux's default, when /proc does not say
_held: list[int] = []  # descriptors of the lock files, closed when the process ends


def reserve_port() -> int:
    """Return a TCP port of 127.0.0.1 that is free and that no other caller gets."""
    _shared_folder()
    candidates = list(range(LOWEST, _ephemeral_start()))
    random.shuffle(candidates)
    for port in candidates:
        try:
            lock = os.open(LOCKS / str(port), os.O_CREAT | os.O_RDWR, 0o666)
        except PermissionError:  # another user's lock file it keeps to itself: theirs
            continue
        _shared(lock)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process holds it
            os.close(lock)
            continue
        if _bindable(port):
            _held.append(lock)
            return port
        os.close(lock)  # taken by a program that takes no lock
    raise RuntimeError(f"no free TCP port between {LOWEST} and {_ephemeral_start()}")


def _shared_folder() -> None:
    """Make the folder of lock files, writable by every user (as /tmp is: each removes only
    their own), so that runs as root and as a normal user on one machine share it."""
    LOCKS.mkdir(exist_ok=True)
    with contextlib.suppress(PermissionError):  # another user's: they made it shared
        if LOCKS.stat().st_mode & 0o1777 != 0o1777:
            LOCKS.chmod(0o1777)


def _shared(lock: int) -> None:
    """Let every user open a lock file this process made (the umask narrows the mode)."""
    with contextlib.suppress(PermissionError):
        os.fchmod(lock, 0o666)


def accepts_connections(port: int) -> bool:
    """Return True when a server listens on 127.0.0.1:`port` (it accepts a connection)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def _bindable(port: int) -> bool:
    with socket.socket() as probe, contextlib.suppress(OSError):
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        return True
    return False


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_START

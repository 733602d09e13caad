"""pytest-xdist under gevent's monkey-patching.

An xdist worker talks to the controller through execnet: a thread of the worker reads the
controller's pipe and hands each test to the main thread through an event. That thread starts
before our plugins load, so it stays a real thread after gevent patches `threading`; the event
and locks created afterwards would be gevent's, which wake no waiter of another thread (the
worker fails with "LoopExit: This operation would block forever"). So a worker gives execnet
the interpreter's own locks and an event built on them, and patches everything else as usual:
its tests run under gevent exactly as in a single process.

The controller runs no test and is not patched at all: patched, its channel readers would be
greenlets blocked in plain pipe reads, and a worker waiting for its next test could wait on a
controller blocked reading the other worker's pipe.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Sequence

# The interpreter's own lock constructors, taken before gevent replaces them.
_allocate_lock = _thread.allocate_lock
_native_rlock = _thread.RLock


def is_worker() -> bool:
    """Return True in a worker process of pytest-xdist."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def distributing(argv: Sequence[str] | None = None) -> bool:
    """Return True when the command line asks pytest-xdist for workers (`-n N`, N > 0)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for position, arg in enumerate(args):
        if arg in ("-n", "--numprocesses"):
            value = args[position + 1] if position + 1 < len(args) else ""
        elif arg.startswith("--numprocesses="):
            value = arg.partition("=")[2]
        elif arg.startswith("-n") and not arg.startswith("--"):
            value = arg[2:]
        else:
            continue
        return value not in ("", "0")
    return False


class NativeEvent:
    """`threading.Event` on the interpreter's own locks: set by one thread, awaited by another."""

    def __init__(self) -> None:
        self._mutex = _allocate_lock()
        self._flag = False
        self._waiters: list = []

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        with self._mutex:
            self._flag = True
            for waiter in self._waiters:
                waiter.release()
            self._waiters.clear()

    def clear(self) -> None:
        with self._mutex:
            self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._mutex:
            if self._flag:
                return True
            waiter = _allocate_lock()
            waiter.acquire()
            self._waiters.append(waiter)
        if waiter.acquire(True, -1 if timeout is None else timeout):
            return True
        with self._mutex:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            return self._flag


def adapt_worker() -> None:
    """Give this worker's execnet channel native locks and events (call before patching)."""
    from execnet import gateway_base

    model = gateway_base.MainThreadOnlyExecModel
    model.Lock = model.RLock = lambda self: _native_rlock()
    model.Event = lambda self: NativeEvent()


def keep_hub_waiting() -> None:
    """Keep the hub of a patched worker waiting for as long as the process lives.

    Once its tests are done, the worker's main thread waits for execnet's word to exit on an
    event made before the patches, whose wait now takes gevent's lock; gevent's locks wake
    from other threads, but a hub with nothing else to wait for gives up at once
    ("LoopExit: This operation would block forever")."""
    import gevent

    gevent.spawn(gevent.sleep, 365 * 24 * 3600)

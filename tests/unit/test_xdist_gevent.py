"""The suite's process split: when a command line asks for xdist workers, and the event that
a thread of the interpreter sets for another."""

import pytest
from gevent.monkey import get_original

from tests.xdist_gevent import NativeEvent, distributing


@pytest.mark.parametrize("argv, expected", [
    ([], False),
    (["tests/unit"], False),
    (["-n", "3"], True),
    (["-n3"], True),
    (["--numprocesses=auto"], True),
    (["--numprocesses", "2", "-q"], True),
    (["-n", "0"], False),
    (["-n0"], False),
    (["-q", "--no-header"], False),  # a long option that starts with -n is not -n
    (["-n"], False),  # pytest refuses it before any worker starts
])
def test_a_command_line_distributes_when_it_asks_for_workers(argv, expected):
    assert distributing(argv) is expected


def test_a_native_event_wakes_a_waiter_from_another_thread():
    """The thread that sets it is one of the interpreter's, as execnet's reader is."""
    event = NativeEvent()
    assert not event.is_set() and not event.wait(timeout=0.01)
    native_sleep = get_original("time", "sleep")
    get_original("_thread", "start_new_thread")(
        lambda: (native_sleep(0.05), event.set()), ())
    assert event.wait(timeout=60)  # True: set, not timed out
    event.clear()
    assert not event.is_set() and not event.wait(timeout=0)
    event.set()
    assert event.wait() and event.is_set()

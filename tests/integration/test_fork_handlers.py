"""A child that a process of ours forks to run another program runs none of the process's
greenlets, with OpenTelemetry's providers, readers and exporters alive (they register fork
handlers that, under gevent, would switch to the hub inside the child)."""

import os
import subprocess

import gevent

from service.runtime.telemetry import Telemetry


def test_a_forked_child_runs_none_of_the_parents_greenlets(tmp_path):
    telemetry = Telemetry(otlp_endpoint="http://127.0.0.1:9")  # exports nothing in this test
    ran = tmp_path / "ran"

    def note_where_it_ran():
        gevent.sleep(0)
        with ran.open("a") as record:
            record.write(f"{os.getpid()}\n")

    try:
        ready = gevent.spawn(note_where_it_ran)  # runnable the moment anything yields
        assert subprocess.run(["true"], check=False).returncode == 0
        ready.join()
    finally:
        telemetry.shutdown(timeout=1)
    assert ran.read_text().split() == [str(os.getpid())]

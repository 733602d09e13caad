"""Start-up objects are frozen out of the collector's full passes in the web process."""

import gc
import os
import subprocess
import sys

from service.local.processes import ROOT
from service.runtime.heap import freeze_startup_objects


def test_freezing_exempts_what_exists_and_still_collects_later_garbage():
    gc.unfreeze()
    try:
        survivor = [object() for _ in range(1000)]
        freeze_startup_objects()
        assert gc.get_freeze_count() >= len(survivor)
        cycle: list = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # made after the freeze: collected as before
    finally:
        gc.unfreeze()


def test_the_web_processes_entry_point_freezes_what_start_up_made():
    environment = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    output = subprocess.run(
        [sys.executable, "-c", "import gc, wsgi; print(gc.get_freeze_count())"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=True)
    assert int(output.stdout) > 10_000  # the modules, the schema, the telemetry SDK

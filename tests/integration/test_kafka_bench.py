"""Keep `python -m bench.ingest` alive: a tiny run prints its table and writes its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EVENTS, BATCH_SIZE = 100, 10


def test_ingest_benchmark_runs_on_a_tiny_topic(tmp_path):
    output = tmp_path / "ingest.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.ingest", "--events", str(EVENTS), "--fan-outs", "1,3",
         "--batch-size", str(BATCH_SIZE), "--fast-unsafe", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=10 * 60, check=False,  # a hang only
    )
    assert result.returncode == 0, result.stderr[-3000:]  # it checks what was stored, too
    assert "deliveries/s" in result.stdout
    report = json.loads(output.read_text())
    assert [run["fan_out"] for run in report["runs"]] == [1, 3]
    for run in report["runs"]:
        assert run["per_second"] > 0 and run["timed_events"] > 0
        assert run["batches"] >= EVENTS // BATCH_SIZE  # no batch larger than the setting

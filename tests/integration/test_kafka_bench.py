"""Keep `python -m bench.ingest` alive: a tiny run prints its table and writes its JSON."""

import json
import subprocess
import sys


def test_ingest_benchmark_runs_on_a_tiny_topic(tmp_path):
    output = tmp_path / "ingest.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.ingest", "--events", "300", "--fan-outs", "1,3",
         "--batch-size", "50", "--fast-unsafe", "--output", str(output)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "deliveries/s" in result.stdout
    report = json.loads(output.read_text())
    assert [run["fan_out"] for run in report["runs"]] == [1, 3]
    assert all(run["per_second"] > 0 for run in report["runs"])

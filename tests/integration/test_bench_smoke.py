"""Every benchmark scenario runs end to end (tiny sizes: this keeps the code alive, it
measures nothing)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_scenario_runs_and_reports(tmp_path):
    result = subprocess.run([sys.executable, "-m", "bench", "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    scenarios = report["scenarios"]
    for name in ("ceiling", "ceiling_sender", "dispatch_1", "dispatch_2", "dispatch_4",
                 "polling", "backlog", "procrastinate", "ingest_fan_out_1",
                 "ingest_fan_out_10"):
        assert scenarios[name]["per_second"] > 0, name
    assert "celery" in scenarios
    assert scenarios["latency"]["received"] == scenarios["latency"]["events"]
    assert scenarios["dispatch_1"]["peak_rss_mb"] > 0
    assert "dispatch_vs_ceiling" in report["ratios"]
    assert "dispatch_1" in result.stdout  # the printed table

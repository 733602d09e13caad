"""`python -m bench tenant-fairness` runs end to end at tiny sizes (it keeps the code alive;
its numbers mean nothing)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_tenant_fairness_benchmark_measures_both_runs_and_reports(tmp_path):
    output = tmp_path / "tenant_fairness.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "tenant-fairness", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=10 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    for run in ("alone", "beside"):
        assert report[run]["received"] == report[run]["events"] > 0
        assert report[run]["p50_ms"] > 0
    assert report["beside"]["busy_per_second"] > 0
    assert report["p50_ratio"] > 0
    assert "p50 beside / alone" in result.stdout

"""`python -m bench ordering` runs end to end at tiny sizes (it keeps the code alive; its
numbers mean nothing)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_ordering_benchmark_measures_every_run_and_reports(tmp_path):
    output = tmp_path / "ordering.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "ordering", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=15 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    for name in ("unordered", "ordered", "ordered_10_keys", "ordered_one_held"):
        assert report[name]["per_second"] > 0, name
    assert report["ordered_one_held"]["held_key_still_waiting"] == 50  # held all along
    assert set(report["ratios"]) == {"ordered_vs_unordered", "ordered_10_keys_vs_unordered",
                                     "one_held_vs_none"}
    assert "ordered_vs_unordered" in result.stdout

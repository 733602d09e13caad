"""`python -m bench catalog` runs end to end at tiny sizes (it keeps the code alive; its
numbers mean nothing)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_catalog_benchmark_measures_every_part_and_reports(tmp_path):
    output = tmp_path / "catalog.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "catalog", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=15 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["publish"]["events_per_second_schema"] > 0
    assert report["wildcards"]["ratio"] > 0
    assert set(report["filters"]["ratios"]) == {"simple", "regex", "half"}
    assert report["filters"]["half"]["deliveries_per_event"] == 10  # odd configs reject it
    assert set(report["evaluation"]) == {"simple", "regex", "half"}
    assert {target["target"] for target in report["targets"]} == {
        "publish with a 2 KB schema ≥ 0.9 x none",
        "fan-out to wildcard subscriptions ≤ 1.2 x exact",
        "fan-out to filtered configs ≤ 1.5 x unfiltered"}

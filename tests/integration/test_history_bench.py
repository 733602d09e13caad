"""Keep `python -m bench history` alive: a tiny history, every measurement, the JSON report.

Tiny sizes on fsync-off PostgreSQL: this checks that each phase runs and reports, not speed.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PATIENCE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_history_benchmark_fills_measures_and_reports(tmp_path):
    output = tmp_path / "history.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "history", "--deliveries", "4000", "--dispatch", "3000",
         "--small-history", "2000", "--calls", "2", "--seconds", "1", "--retention-backlog",
         "2000", "--fast-unsafe", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["fill"]["deliveries"] == 4000
    assert report["fill"]["attempts"] > 2 * 4000  # about three per delivery
    for side in ("dispatch_empty", "dispatch_history"):  # the window lasts until both deliver
        assert report[side]["deliveries"] > 0 and report[side]["per_second"] > 0, side
    assert {"list first page", "list deep page", "list old 1-day window", "stats",
            "delivery with attempts"} <= set(report["api"])
    assert all(call["p99_ms"] > 0 for call in report["api"].values())
    kept = report["retention"]
    # The fill leaves a day past each retention age: all of it goes (and whatever crossed the
    # age in the seconds between counting it and deleting it).
    assert kept["deliveries"] >= kept["expected_deliveries"] > 0
    assert kept["attempts"] >= kept["expected_deliveries"]  # each had one at least: gone too
    assert kept["rows_per_second"] > 0
    assert report["upgrade"]["migration_log"] == [
        "applying 0008_history_indexes_and_autovacuum.sql"]
    assert report["disk"]["per_million_mb"] > 0
    assert {check["target"] for check in report["targets"]} >= {
        "dispatch with history ≥ 0.8 x empty", "every API call p99 ≤ 50 ms"}
    assert "disk per million deliveries" in result.stdout


def test_the_history_benchmark_explains_itself():
    result = subprocess.run([sys.executable, "-m", "bench", "history", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert result.returncode == 0
    assert "--deliveries" in result.stdout and "--fast-unsafe" in result.stdout

"""`python -m bench announcements` runs end to end at a tiny size (it keeps the code alive; its
numbers mean nothing)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_announcements_benchmark_measures_every_variant_and_the_relay(tmp_path):
    output = tmp_path / "announcements.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "announcements", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=10 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    for name in ("succeeding", "exhausted_off", "exhausted_on"):
        assert report[name]["records"] == 3, name
    assert report["relay"]["announcements"] == 15  # 3 records of 5, each result announced
    assert "per announcement" in result.stdout

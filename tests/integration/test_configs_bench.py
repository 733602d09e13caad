"""`python -m bench configs` runs end to end at tiny sizes (it keeps the code alive; its
numbers mean nothing) and explains itself."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_configs_benchmark_measures_every_part_and_reports(tmp_path):
    output = tmp_path / "configs.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "configs", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=20 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert set(report["dispatch"]) == {"10_1", "60_1"}
    for run in report["dispatch"].values():
        assert run["per_second"] > 0
        assert run["claims"] > 0 and run["claim_ms_per_delivery"] > 0  # pg_stat_statements
    assert report["dispatch"]["60_1"]["deliveries_due"] >= 200
    for size in ("0", "60"):
        latency = report["latency"][size]
        assert latency["received"] == latency["events"] > 0
    assert report["hot"]["one"]["workers"] == report["hot"]["ten"]["workers"] == 4
    assert report["fan_out"]["configs"] == 50 and report["fan_out"]["p50_ms"] > 0
    assert report["api"]["configs"] == 60
    assert all(call["p99_ms"] > 0 for call in report["api"]["calls"].values())
    assert {target["target"] for target in report["targets"]} >= {
        "dispatch at every size ≥ 0.8 x 10 configs", "four workers on one config ≥ 0.9 x over ten"}
    assert "four workers: one config" in result.stdout


def test_the_configs_benchmark_explains_itself_and_refuses_bad_sizes():
    shown = subprocess.run([sys.executable, "-m", "bench", "configs", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--sizes" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "bench", "configs", "--sizes", "ten"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "not a list of numbers" in refused.stderr
    refused = subprocess.run([sys.executable, "-m", "bench", "configs", "--parts", "dispatch/x"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "unknown part(s): x" in refused.stderr

"""`python -m bench tenants` runs end to end at tiny sizes (it keeps the code alive; its
numbers mean nothing) and explains itself."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_tenants_benchmark_measures_every_part_and_reports(tmp_path):
    output = tmp_path / "tenants.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "tenants", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=20 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert set(report["created"]) == {"10", "60"}
    for created in report["created"].values():
        for kind in ("tenant_one_at_a_time", "tenants_at_once", "configs", "deliveries"):
            assert created[kind]["per_second"] > 0, kind
    assert report["created"]["60"]["configs"]["count"] == 120  # 1 + n % 3 each
    assert all(call["p99_ms"] > 0 for call in report["api"]["calls"].values())
    assert report["ratios"]["stats_statements_100"] == 1  # one statement for the whole page
    assert set(report["fan_out"]) == set(report["dispatch"]) == {"10", "60"}
    assert all(run["per_second"] > 0 and run["claims"] > 0
               for run in report["dispatch"].values())
    plans = (tmp_path / "tenants-plans.txt").read_text()
    assert "=== claim at 60 tenants ===" in plans and "subscribers" in plans
    assert "Index" in plans  # auto_explain's nested plans, not only the top statement's
    assert "dispatch, 1 worker" in result.stdout


def test_the_tenants_benchmark_explains_itself_and_refuses_bad_options():
    shown = subprocess.run([sys.executable, "-m", "bench", "tenants", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--tenants" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "bench", "tenants", "--parts", "api/x"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "unknown part(s): x" in refused.stderr

"""Every benchmark scenario runs end to end on what the dev extra installs (tiny sizes: this
keeps the code alive, it measures nothing); its JSON goes to a temporary folder."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PATIENCE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ("ceiling", "dispatch", "polling", "ingest", "latency", "backlog", "isolation",
             "pooler")
RATES = ("ceiling", "ceiling_sender", "dispatch_1", "polling", "backlog", "ingest_fan_out_1",
         "pooler_dispatch_direct", "pooler_dispatch_pooled")
LATENCIES = ("latency", "pooler_latency_direct", "pooler_latency_pooled",
             "pooler_latency_pooled_direct_url")
# Without the bench extra, as after `pip install -e '.[dev]'`: its package hidden from imports
WITHOUT_CELERY = ("import runpy, sys; sys.modules['celery'] = None; "
                  "runpy.run_module('bench', run_name='__main__')")


def _files(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in folder.glob("*")}


def test_every_scenario_but_the_peers_runs_and_reports(tmp_path):
    in_the_repository = _files(ROOT / "bench" / "results")
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--results", str(tmp_path), *SCENARIOS],
        cwd=ROOT, capture_output=True, text=True, timeout=30 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    assert _files(ROOT / "bench" / "results") == in_the_repository
    assert len(list(tmp_path.glob("*.json"))) == 2  # a timestamped copy and latest.json
    report = json.loads((tmp_path / "latest.json").read_text())
    scenarios = report["scenarios"]
    assert set(scenarios) == {*RATES, *LATENCIES, "isolation_hung", "isolation_slow_200",
                              "isolation_claim"}
    for name in RATES:
        assert scenarios[name]["per_second"] > 0, name
    for name in LATENCIES:
        assert scenarios[name]["received"] == scenarios[name]["events"] > 0, name
    assert scenarios["dispatch_1"]["peak_rss_mb"] > 0
    assert scenarios["dispatch_1"]["cpu_ms_per_delivery"] > 0  # the workers' CPU, per delivery
    assert scenarios["ceiling_sender"]["cpu_ms_per_post"] > 0
    hung = scenarios["isolation_hung"]
    assert hung["alone_per_second"] > 0 and hung["beside_hung_per_second"] > 0
    assert hung["ratio"] == round(hung["beside_hung_per_second"] / hung["alone_per_second"], 3)
    slow = scenarios["isolation_slow_200"]
    assert slow["received"] == slow["events"] > 0 and slow["max_ms"] > 0
    claim = scenarios["isolation_claim"]
    assert claim["claim_ms_empty"] > 0 and claim["claim_ms_behind_held"] > 0
    assert {"dispatch_vs_ceiling", "dispatch_vs_polling", "backlog_vs_dispatch",
            "pooled_vs_direct"} <= set(report["ratios"])
    assert {check["target"] for check in report["targets"]} >= {
        "dispatch ≥ 0.8 x raw ceiling", "latency p99 ≤ 50 ms",
        "fast endpoints beside a hung one ≥ 0.8 x alone"}
    assert "dispatch_1" in result.stdout  # the printed table


def test_the_peers_without_the_bench_extra_say_what_to_install(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_CELERY, "peers", "--results", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert "celery" in line and "pip install -e '.[dev,bench]'" in line
    assert not list(tmp_path.iterdir())

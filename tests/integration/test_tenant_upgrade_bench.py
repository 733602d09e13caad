"""Keep `python -m bench tenant-upgrade` alive: a tiny history at the schema before tenants,
the upgrade under the load, the JSON report.

Tiny sizes on fsync-off PostgreSQL: this checks that each phase runs and reports, not speed.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"deliveries", "events", "delivery_attempts", "configs"}


def test_the_tenant_upgrade_benchmark_fills_upgrades_under_load_and_reports(tmp_path):
    output = tmp_path / "tenant_upgrade.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "tenant-upgrade", "--deliveries", "2000", "--seconds",
         "1", "--long-read", "0.2", "--replay-keys", "10", "--fast-unsafe",
         "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["fill"]["deliveries"] == 2000
    (current,) = report["variants"].values()
    assert [line.split()[-1] for line in current["migration_log"]
            if "applying" in line][:2] == ["0028_tenants.sql", "0029_events_keyed_by_tenant.sql"]
    for phase in ("before", "during"):
        assert set(current[phase]["lock_waits"]) == TABLES
        assert current[phase]["counts"]["dispatch"] > 0, phase
    after = current["tenants_after"]
    for table in ("configs", "events", "deliveries", "delivery_attempts"):
        assert set(after[table]) == {"default"}, table
    assert after["api_tokens"] == {"(platform)": 2}
    assert "no statement on deliveries waits" in result.stdout

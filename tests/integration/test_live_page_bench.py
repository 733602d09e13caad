"""`python -m bench live-page` runs end to end at a tiny size (it keeps the code alive; its
numbers mean nothing) and explains itself."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_live_page_benchmark_measures_a_minute_of_every_page(tmp_path):
    output = tmp_path / "live_page.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "live-page", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=10 * 60)  # bounds a hang only
    assert result.returncode == 0, result.stderr[-3000:]
    pages = json.loads(output.read_text())["sizes"]["100"]
    assert set(pages) == {"overview", "configs", "a config", "deliveries", "failed deliveries",
                          "a delivery"}
    for page in pages.values():
        assert page["requests"] == 6  # a refresh every 10 s
        assert page["statements"] >= page["requests"] and page["database_ms"] > 0
        assert not any(t["statement"].startswith(("BEGIN", "COMMIT")) for t in page["most_called"])
    assert "one open page, per minute" in result.stdout


def test_the_live_page_benchmark_explains_itself_and_refuses_bad_sizes():
    shown = subprocess.run([sys.executable, "-m", "bench", "live-page", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--sizes" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "bench", "live-page", "--sizes", "10"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "each value must be 41 or more" in refused.stderr

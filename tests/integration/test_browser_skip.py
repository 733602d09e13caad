"""Without a browser the dashboard's tests say plainly that they did not run, and under CI
they fail: a run without them must never pass for a run with them."""

from __future__ import annotations

import os
import subprocess
import sys

from service.local.processes import ROOT

ONE_BROWSER_TEST = ("tests/browser/test_sign_in_and_roles.py::"
                    "test_a_viewer_sees_everything_and_can_change_nothing")


def _run(ci: bool) -> subprocess.CompletedProcess:
    environ = {name: value for name, value in os.environ.items() if name != "CI"}
    environ["WEBHOOKS_CHROMIUM"] = "/nonexistent/chromium"
    if ci:
        environ["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", ONE_BROWSER_TEST], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=600,
                          check=False)


def test_without_chromium_the_browser_tests_say_they_were_not_run():
    result = _run(ci=False)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout
    assert "browser tests NOT run: no Chromium at /nonexistent/chromium" in result.stdout


def test_without_chromium_under_ci_the_browser_tests_fail():
    result = _run(ci=True)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "CI must run them" in result.stdout

"""A whole-suite run splits into two pytest processes (tests/shards.py): proved on a small
project of its own, so that a failure in either half fails the run and both reports show."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests import shards
from tests.processes import ROOT

PROJECT_INI = """\
[pytest]
testpaths = checks
addopts = -p tests.shards -p no:cacheprovider
"""


def _project(tmp_path, files: dict[str, str]):
    (tmp_path / "pytest.ini").write_text(PROJECT_INI)
    (tmp_path / "checks").mkdir()
    for name, body in files.items():
        (tmp_path / "checks" / name).write_text(textwrap.dedent(body))
    return tmp_path


def _pytest(project, *args, **env):
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=project, capture_output=True, text=True,
        timeout=300, check=False,
        env={**{k: v for k, v in os.environ.items() if k != shards.OFF},
             "PYTHONPATH": str(ROOT), **env})


PASSING = {f"test_{n}.py": f"def test_{n}_a():\n    pass\n\ndef test_{n}_b():\n    pass\n"
           for n in ("one", "two", "three", "four")}


def test_a_whole_run_is_split_and_reports_both_halves(tmp_path):
    result = _pytest(_project(tmp_path, PASSING), "-v")
    assert result.returncode == 0, result.stdout
    assert "the other half of the test files (exit code 0)" in result.stdout
    for n in ("one", "two", "three", "four"):  # each test ran once, in one half or the other
        assert result.stdout.count(f"test_{n}.py::test_{n}_a PASSED") == 1, result.stdout
    assert result.stdout.count("4 passed, 4 deselected") == 2


@pytest.mark.parametrize("half", [0, 1])  # 0: this process's half, 1: the other's
def test_a_failure_in_either_half_fails_the_run(tmp_path, half):
    names = ("one", "two", "three", "four")
    halves = shards.split({f"checks/test_{n}.py": 2 for n in names})
    assert all(halves)
    failing = sorted(halves[half])[0].removeprefix("checks/test_").removesuffix(".py")
    files = dict(PASSING)
    files[f"test_{failing}.py"] = (f"def test_{failing}_a():\n    assert False, 'broken'\n\n"
                                   f"def test_{failing}_b():\n    pass\n")
    result = _pytest(_project(tmp_path, files))
    assert result.returncode == 1, result.stdout
    assert f"FAILED checks/test_{failing}.py::test_{failing}_a" in result.stdout
    # this process's own report is the last one printed; the other half's comes before it
    own = result.stdout.rsplit("this half", 1)[1]
    assert (f"FAILED checks/test_{failing}.py" in own) == (half == 0)


def test_a_run_given_paths_one_report_file_or_told_not_to_is_not_split(tmp_path):
    project = _project(tmp_path, PASSING)
    report = tmp_path / "report.xml"
    for result in (_pytest(project, "checks"), _pytest(project, f"--junitxml={report}"),
                   _pytest(project, f"--basetemp={tmp_path / 'base'}"),
                   _pytest(project, **{shards.OFF: "1"})):
        assert result.returncode == 0, result.stdout
        assert "other half" not in result.stdout and "8 passed" in result.stdout
    assert 'tests="8"' in report.read_text()


def test_a_narrow_selection_runs_once_and_an_empty_one_is_still_no_tests(tmp_path):
    project = _project(tmp_path, PASSING)
    narrow = _pytest(project, "-v", "-k", "two")
    assert narrow.returncode == 0, narrow.stdout
    assert narrow.stdout.count("test_two.py::test_two_a PASSED") == 1
    empty = _pytest(project, "-k", "nothing_matches")
    assert empty.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, empty.stdout


def test_files_are_split_by_weight_the_heaviest_first():
    files = {"a.py": 10, "b.py": 10, "c.py": 1, "d.py": 1}
    halves = shards.split(files)
    assert halves[0] | halves[1] == set(files) and not halves[0] & halves[1]
    assert not any({"a.py", "b.py"} <= half for half in halves)  # the heavy two are apart
    assert shards.split(files) == halves  # the same in both processes


@pytest.mark.parametrize(("code", "reported"), [
    (1, 1), (2, 2), (3, 3), (5, 1), (-9, 3)])
def test_an_other_half_that_failed_ran_nothing_or_died_fails_the_run(code, reported):
    assert shards._failure(code) == reported


def test_the_other_half_fails_when_it_did_not_collect_a_file_it_was_given(tmp_path):
    project = _project(tmp_path, PASSING)
    given = tmp_path / "files.json"
    given.write_text('{"mine": ["checks/test_one.py", "checks/test_gone.py"], "theirs": []}')
    result = _pytest(project, f"--shard={given}")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "did not collect: checks/test_gone.py" in result.stderr

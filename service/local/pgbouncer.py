"""Debian's PgBouncer in transaction mode, in front of a local PostgreSQL, as managed platforms
run it (Heroku's connection pooling, Supabase's and Neon's poolers): each transaction of a
client may run on another server session.

PgBouncer refuses to run as root: as root it runs as `nobody`, from a folder that user can
read. Every database of the server is reachable through it by its own name, on 127.0.0.1 and
on a Unix socket in that folder (`unix_socket_dir`). It reaches the server as the server's DSN
says: by TCP, or by the server's Unix socket when the DSN's host is a folder (PgBouncer beside
PostgreSQL on one host, both ends on Unix sockets).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from db.adhoc import dsn_parts, dsn_with
from service.local.ports import accepts_connections, reserve_port

BINARY = os.environ.get("WEBHOOKS_PGBOUNCER", "/usr/sbin/pgbouncer")
START_TIMEOUT = 60.0  # seconds to wait for it to accept connections on a busy machine
NOT_INSTALLED = ("pooler tests NOT run: no PgBouncer at {path} (apt-get install pgbouncer, or "
                 "set WEBHOOKS_PGBOUNCER)")


class LocalPgBouncer:
    """One PgBouncer on 127.0.0.1 and a Unix socket, in transaction mode; a context manager."""

    def __init__(self, server_dsn: str, *, pool_size: int = 20) -> None:
        server = dsn_parts(server_dsn)
        self.server_host = server.get("host", "127.0.0.1")
        self.server_port = int(server.get("port", 5432))
        self.user = server.get("user", "postgres")
        self.pool_size = pool_size
        self.port = reserve_port()
        self.base = Path(tempfile.mkdtemp(prefix="webhooks-pgbouncer-"))
        self.base.chmod(0o755)
        self.unix_socket_dir = self.base
        self._process: subprocess.Popen | None = None

    @staticmethod
    def missing() -> str | None:
        """Say what is missing to run PgBouncer here, if anything."""
        if shutil.which(BINARY) is None and not Path(BINARY).exists():
            return NOT_INSTALLED.format(path=BINARY)
        return None

    def dsn_for(self, server_dsn: str, *, unix_socket: bool = False) -> str:
        """Return `server_dsn` (a database of the server behind) as reached through PgBouncer,
        on its Unix socket if `unix_socket`."""
        host = str(self.unix_socket_dir) if unix_socket else "127.0.0.1"
        return dsn_with(server_dsn, host=host, port=self.port)

    @property
    def log_path(self) -> Path:
        return self.base / "pgbouncer.log"

    def start(self) -> None:
        config = self.base / "pgbouncer.ini"
        users = self.base / "users.txt"
        users.write_text(f'"{self.user}" ""\n')
        config.write_text(
            "[databases]\n"
            f"* = host={self.server_host} port={self.server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            f"unix_socket_dir = {self.unix_socket_dir}\n"
            "auth_type = trust\n"
            f"auth_file = {users}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            "max_client_conn = 1000\n"
            f"logfile = {self.log_path}\n"
            f"pidfile = {self.base / 'pgbouncer.pid'}\n")
        command = [BINARY, "-q", str(config)]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root
            nobody = pwd.getpwnam("nobody")
            for path in (self.base, config, users):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
            command[1:1] = ["-u", "nobody"]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while not (accepts_connections(self.port) and self._listens_on_unix_socket()):
            if self._process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited with {self._process.returncode}: "
                                   f"{self._process.stderr.read().decode()}{self._log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pgbouncer did not listen within {START_TIMEOUT} s")
            time.sleep(0.02)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # shut down at once, closing client sessions
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process is not None and process.stderr is not None:
            process.stderr.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> LocalPgBouncer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _listens_on_unix_socket(self) -> bool:
        with socket.socket(socket.AF_UNIX) as local:
            local.settimeout(0.5)
            try:
                local.connect(str(self.unix_socket_dir / f".s.PGSQL.{self.port}"))
            except OSError:
                return False
        return True

    def _log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

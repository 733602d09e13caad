"""A PostgreSQL that speaks TLS only, with a certificate of a test CA and a password: Debian's
server binaries (the embedded wheel's build has no SSL). As root the server runs as `nobody`,
from a folder that user can read."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from db.adhoc import create_database
from service.local.ports import reserve_port

START_TIMEOUT = 60  # seconds pg_ctl waits for the server on a busy machine
NOT_INSTALLED = ("TLS tests NOT run: no PostgreSQL server binaries with SSL under "
                 "/usr/lib/postgresql (apt-get install postgresql)")


def server_binaries() -> Path | None:
    """Return the bin folder of Debian's newest PostgreSQL server, if one is installed."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda path: int(path.parent.parent.name) if path.parent.parent.name
                   .isdigit() else 0)
    return found[-1].parent if found else None


class TlsPostgres:
    """One server on 127.0.0.1 that refuses anything but TLS with a password (SCRAM)."""

    user = "webhooks"

    def __init__(self, password: str) -> None:
        self.password = password
        self.port = reserve_port()
        self.base = Path(tempfile.mkdtemp(prefix="webhooks-tls-pg-"))
        self.base.chmod(0o755)
        self.data = self.base / "pgdata"
        self.ca = self.base / "ca.pem"
        self.other_ca = self.base / "other-ca.pem"  # a CA that signed nothing of the server's
        self._bin = server_binaries()

    def url(self, **query: str) -> str:
        options = "&".join(f"{name}={value}" for name, value in query.items())
        return (f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/webhooks"
                + (f"?{options}" if options else ""))

    def start(self) -> None:
        if self._bin is None:
            raise RuntimeError(NOT_INSTALLED)
        self._certificates()
        password_file = self.base / "password"
        password_file.write_text(self.password)
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=scram-sha-256",
                  "--pwfile", str(password_file), "-E", "UTF8")
        password_file.unlink()
        (self.data / "pg_hba.conf").write_text(
            "local all all scram-sha-256\n"
            "hostssl all all 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 reject\n")  # nothing without TLS
        for name in ("server.pem", "server.key"):
            shutil.copy(self.base / name, self.data / name)
            self._own(self.data / name)
        (self.data / "server.key").chmod(0o600)
        options = (f"-h 127.0.0.1 -p {self.port} -k {self.data} -c ssl=on "
                   "-c ssl_cert_file=server.pem -c ssl_key_file=server.key "
                   "-c fsync=off -c synchronous_commit=off")
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", str(START_TIMEOUT),
                  "-l", str(self.data / "postgres.log"), "-o", options, "start")
        create_database(self.url(sslmode="require").replace("/webhooks?", "/postgres?"),
                        "webhooks")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "immediate", "stop")
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> TlsPostgres:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _certificates(self) -> None:
        """A test CA, the server's certificate for 127.0.0.1 and localhost, another CA."""
        for ca in ("ca", "other-ca"):
            _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                     "-subj", f"/CN=webhooks test {ca}", "-keyout", str(self.base / f"{ca}.key"),
                     "-out", str(self.base / f"{ca}.pem"))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                 "-keyout", str(self.base / "server.key"), "-out", str(self.base / "server.csr"))
        extensions = self.base / "san.cnf"
        extensions.write_text("subjectAltName = IP:127.0.0.1, DNS:localhost\n")
        _openssl("x509", "-req", "-in", str(self.base / "server.csr"), "-CA", str(self.ca),
                 "-CAkey", str(self.base / "ca.key"), "-CAcreateserial", "-days", "2",
                 "-extfile", str(extensions), "-out", str(self.base / "server.pem"))

    def _run(self, program: str, *args: str) -> None:
        kwargs: dict = {}
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            nobody = pwd.getpwnam("nobody")
            self._own(self.base)
            kwargs = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
        result = subprocess.run([str(self._bin / program), *args], capture_output=True,
                                text=True, cwd=self.base, check=False, timeout=120, **kwargs)
        if result.returncode != 0:
            log = self.data / "postgres.log"
            raise RuntimeError(f"{program} failed: {result.stderr or result.stdout}"
                               + (log.read_text() if log.exists() else ""))

    def _own(self, path: Path) -> None:
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(path, nobody.pw_uid, nobody.pw_gid)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)

"""Disposable embedded PostgreSQL servers for the tests and the benchmarks."""

from __future__ import annotations

import tempfile
from pathlib import Path

from service.local.postgres import LocalPostgres
from tests.support.ports import reserve_port


def temporary_postgres(*, fast_unsafe: bool = True) -> LocalPostgres:
    """Return a disposable server in a new temporary folder, on a reserved port (not started):
    `with temporary_postgres() as server:` starts it, then removes it with its data."""
    base = Path(tempfile.mkdtemp(prefix="webhooks-pg-"))
    base.chmod(0o755)
    return LocalPostgres(base=base, port=reserve_port(), fast_unsafe=fast_unsafe,
                         disposable=True)

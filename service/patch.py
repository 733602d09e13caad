"""Make the process cooperative: gevent's monkey patches first, then psycopg2's wait callback.

Every entry point calls `patch()` before importing anything that opens sockets or threads.

This is the one place above `db/` that touches the database driver, and on purpose: the
wait callback (psycogreen) belongs to the process, not to `db/`, and must be installed in
the entry point's first lines, right after the monkey patches and before any module of ours
is imported (importing `db/` would import the driver and gevent's primitives before the
patches). It changes how the driver waits for the socket; it runs no statement and catches
no error.
"""

from __future__ import annotations


def patch() -> None:
    """Apply gevent's monkey patches and psycogreen's; safe to call more than once."""
    from gevent import monkey

    if not monkey.is_module_patched("socket"):
        monkey.patch_all()
    from psycogreen.gevent import patch_psycopg

    patch_psycopg()

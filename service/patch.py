"""Make the process cooperative: gevent's monkey patches first, then psycopg2's wait callback.

Every entry point calls `patch()` before importing anything that opens sockets or threads.
"""

from __future__ import annotations


def patch() -> None:
    """Apply gevent's monkey patches and psycogreen's; safe to call more than once."""
    from gevent import monkey

    if not monkey.is_module_patched("socket"):
        monkey.patch_all()
    from psycogreen.gevent import patch_psycopg

    patch_psycopg()

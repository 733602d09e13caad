"""Loaded by pytest before any other plugin (`-p tests.gevent_first` in setup.cfg).

gevent must patch the standard library before anything imports ssl or sockets, and
entry-point plugins (schemathesis, hypothesis) are loaded before conftest.py.

A run spread over processes by pytest-xdist (`-n 2`) is patched in its workers only
(tests/xdist_gevent.py says why and how); the controller, which runs no test, stays as it is.
"""

from tests import xdist_gevent

if xdist_gevent.is_worker():
    xdist_gevent.adapt_worker()

if xdist_gevent.is_worker() or not xdist_gevent.distributing():
    from service.patch import patch

    patch()

if xdist_gevent.is_worker():
    xdist_gevent.keep_hub_waiting()

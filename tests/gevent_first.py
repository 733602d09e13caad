"""Loaded by pytest before any other plugin (`-p tests.gevent_first` in setup.cfg).

gevent must patch the standard library before anything imports ssl or sockets, and
entry-point plugins (schemathesis, hypothesis) are loaded before conftest.py.
"""

from service.patch import patch

patch()

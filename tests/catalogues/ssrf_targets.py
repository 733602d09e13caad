"""A catalogue of tricky SSRF targets: hosts that are, or resolve to, addresses inside.

Shared by tests/integration/test_ssrf_catalogue.py and the `ssrf` chaos scenario. The names
of FAKE_DNS resolve only where `resolver()` replaces `socket.getaddrinfo`: in the tests, and
in the scenario's worker processes (tests/reliability/ssrf_worker.py).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

LITERAL_HOSTS = [
    "127.0.0.1", "127.1", "127.255.255.254", "2130706433", "0x7f000001", "0177.0.0.1",
    "0x7f.0.0.1", "0177.1", "0.0.0.0", "0", "[::1]", "[::]", "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "10.0.0.1",
    "0x0a000001", "172.16.0.1", "172.31.255.254", "192.168.1.1", "169.254.169.254",
    "[::ffff:169.254.169.254]", "[fd00:ec2::254]", "100.100.100.200", "169.254.0.1",
    "[fe80::1]", "[fc00::1]", "[fec0::1]", "100.64.0.1", "198.18.0.1", "224.0.0.1",
    "255.255.255.255", "240.0.0.1", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "192.0.0.1",
    "192.0.2.1", "[ff02::1]", "[::ffff:a9fe:a9fe]",
]
NAME_HOSTS = ["localhost", "LOCALHOST", "Localhost", "internal.test",
              "metadata.google.internal", "mixed.test", "v6only.test", "loopback.test",
              "loopback6.test"]
HOSTS = LITERAL_HOSTS + NAME_HOSTS
FAKE_DNS = {
    "internal.test": ["10.1.2.3"],
    "metadata.google.internal": ["169.254.169.254"],
    "mixed.test": ["93.184.216.34", "127.0.0.1"],  # one private answer is enough to refuse
    "v6only.test": ["fd12:3456::1"],
    "loopback.test": ["127.0.0.1"],
    "loopback6.test": ["::1"],
}

GetAddrInfo = Callable[..., list]


def resolver(real: GetAddrInfo) -> GetAddrInfo:
    """Return a getaddrinfo that answers FAKE_DNS's names (as it is then) and asks `real` else."""

    def getaddrinfo(host, port, *args, **kwargs):
        if host in FAKE_DNS:
            return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM,
                     6, "", (address, port)) for address in FAKE_DNS[host]]
        return real(host, port, *args, **kwargs)

    return getaddrinfo

"""A catalogue of tricky targets: with private endpoints not allowed, no connection is made."""

import socket

import pytest
import urllib3.util.connection

from tests.helpers import wait_until

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
              "metadata.google.internal", "mixed.test", "v6only.test"]
FAKE_DNS = {
    "internal.test": ["10.1.2.3"],
    "metadata.google.internal": ["169.254.169.254"],
    "mixed.test": ["93.184.216.34", "127.0.0.1"],  # one private answer is enough to refuse
    "v6only.test": ["fd12:3456::1"],
}


@pytest.fixture
def network(monkeypatch):
    """Record every connection the sender opens, and resolve the catalogue's fake names."""
    connections = []
    real_getaddrinfo = socket.getaddrinfo
    real_connect = urllib3.util.connection.create_connection

    def getaddrinfo(host, port, *args, **kwargs):
        if host in FAKE_DNS:
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6,
                     "", (a, port)) for a in FAKE_DNS[host]]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        connections.append(address)
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", create_connection)
    return connections


def test_the_catalogue_is_large():
    assert len(LITERAL_HOSTS) + len(NAME_HOSTS) >= 30


def test_no_private_target_is_ever_connected(make, receiver, start_worker, network):
    ids = {}
    for n, host in enumerate(LITERAL_HOSTS + NAME_HOSTS):
        config = make.config(endpoint=f"http://{host}:{receiver.port}/hook",
                             event_types=[f"t{n}"])
        _, (delivery_id,) = make.event(type=f"t{n}")
        ids[delivery_id] = (host, config.id)
    start_worker(allow_private_endpoints=False, dispatch_concurrency=20)
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = 'failed'")
               == len(ids), timeout=30)
    for delivery_id, (host, _) in ids.items():
        (attempt,) = make.attempts(delivery_id)
        assert attempt["outcome"] == "blocked", host
        assert "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS" in attempt["error"], host
    assert network == []
    assert receiver.connections == 0


def test_the_connection_goes_to_the_address_that_was_checked(make, start_worker, network,
                                                             monkeypatch):
    answers = iter(["93.184.216.34", "127.0.0.1", "127.0.0.1", "127.0.0.1"])

    def rebinding(host, port, *args, **kwargs):  # public when checked, loopback after
        address = next(answers)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    make.config(endpoint="http://rebind.test:9/hook")
    _, (delivery_id,) = make.event()
    start_worker(allow_private_endpoints=False, min_backoff=0.05, max_backoff=0.05,
                 http_timeout=1.0)
    wait_until(lambda: len(make.attempts(delivery_id)) >= 2, timeout=20)
    assert network[0][0] == "93.184.216.34"
    assert all(address[0] != "127.0.0.1" for address in network)
    outcomes = [a["outcome"] for a in make.attempts(delivery_id)]
    assert outcomes[0] in ("network_error", "timeout")
    assert outcomes[1] == "blocked"


def test_public_addresses_are_allowed_through(make, start_worker, network, monkeypatch):
    monkeypatch.setitem(FAKE_DNS, "public.test", ["93.184.216.34"])
    make.config(endpoint="http://public.test:9/hook")
    _, (delivery_id,) = make.event()
    start_worker(allow_private_endpoints=False, http_timeout=1.0, min_backoff=3600.0)
    wait_until(lambda: make.attempts(delivery_id), timeout=20)
    assert network and network[0] == ("93.184.216.34", 9)

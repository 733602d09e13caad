"""A catalogue of tricky targets: with private endpoints not allowed, no connection is made."""

import socket

import pytest
import urllib3.util.connection

from tests.catalogues.ssrf_targets import FAKE_DNS, HOSTS, resolver
from tests.helpers import wait_until


@pytest.fixture
def network(monkeypatch):
    """Record every connection the sender opens, and resolve the catalogue's fake names."""
    connections = []
    real_connect = urllib3.util.connection.create_connection

    def create_connection(address, *args, **kwargs):
        connections.append(address)
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver(socket.getaddrinfo))
    monkeypatch.setattr(urllib3.util.connection, "create_connection", create_connection)
    return connections


def test_the_catalogue_is_large():
    assert len(HOSTS) >= 30


def test_no_private_target_is_ever_connected(make, receiver, start_worker, network):
    ids = {}
    for n, host in enumerate(HOSTS):
        config = make.config(endpoint=f"http://{host}:{receiver.port}/hook",
                             event_types=[f"t{n}"])
        _, (delivery_id,) = make.event(type=f"t{n}")
        ids[delivery_id] = (host, config.id)
    start_worker(allow_private_endpoints=False, dispatch_concurrency=20)
    wait_until(lambda: make.count("SELECT count(*) FROM deliveries WHERE status = 'failed'")
               == len(ids))
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
    wait_until(lambda: len(make.attempts(delivery_id)) >= 2)
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
    wait_until(lambda: make.attempts(delivery_id))
    assert network and network[0] == ("93.184.216.34", 9)

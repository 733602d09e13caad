import ipaddress
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.policy.ssrf import endpoint_refusal, forbidden_reason, host_literal

FORBIDDEN = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("127.1.2.3", "loopback"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.0.1", "private"),
    ("192.168.255.255", "private"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.0.1", "link-local"),
    ("169.254.170.2", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("100.64.0.1", "shared address space"),
    ("100.127.255.254", "shared address space"),
    ("100.100.100.200", "shared address space"),  # Alibaba Cloud metadata
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.254", "benchmarking"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("192.0.0.1", "reserved"),
    ("192.0.0.9", "reserved"),
    ("192.0.0.192", "reserved"),  # Oracle Cloud metadata
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.254", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("0:0:0:0:0:0:0:1", "loopback"),
    ("fd00:ec2::254", "cloud metadata"),
    ("fd00::1", "unique-local"),
    ("fc00::1", "unique-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fe80::a9fe:a9fe%1", "link-local"),
    ("febf::1", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:7f00:1", "IPv4-mapped loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped private"),
    ("::ffff:169.254.169.254", "IPv4-mapped cloud metadata"),
    ("::ffff:0.0.0.0", "IPv4-mapped unspecified"),
    ("::127.0.0.1", "IPv4-compatible loopback"),
    ("::8.8.8.8", "IPv4-compatible address"),
    ("64:ff9b::7f00:1", "NAT64 loopback"),
    ("64:ff9b::192.168.1.1", "NAT64 private"),
    ("64:ff9b:1::1", "local-use NAT64"),
    ("2002:7f00:1::", "6to4 loopback"),
    ("2002:a9fe:a9fe::1", "6to4 cloud metadata"),
    ("2002:c0a8:101::", "6to4 private"),
    ("2001::1", "teredo"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
    ("2001:2::1", "benchmarking"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("100::1", "reserved"),  # discard-only
    ("2001:10::1", "reserved"),  # ORCHID
    ("::1:0:0", "reserved"),  # unassigned ::/8, outside every embedding range
    ("4000::1", "reserved"),  # unassigned, outside global unicast 2000::/3
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "140.82.112.3",
    "172.15.255.255",
    "172.32.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "169.253.255.255",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:82b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("address", "reason"), FORBIDDEN)
def test_forbidden_addresses(address, reason):
    assert forbidden_reason(address) == reason


def test_catalogue_is_large():
    assert len(FORBIDDEN) >= 40


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address):
    assert forbidden_reason(address) is None


@pytest.mark.parametrize(
    "address",
    ["", "localhost", "example.com", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1",
     "[::1]", "010.0.0.1", "1.2.3.4.", "1.2.3", "256.0.0.1", " 8.8.8.8", "::ffff::1", "fe80::1%",
     "8.8.8.8/32"],
)
def test_non_addresses_are_refused(address):
    assert forbidden_reason(address) == "not an IP address"


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("8.8.8.8", "8.8.8.8"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0X7F.0.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("025177524776", "169.254.169.254"),
        ("012.0.0.1", "10.0.0.1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::]", "::"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("[FE80::1%eth0]", "fe80::1%eth0"),
        ("[2606:4700:4700::1111]", "2606:4700:4700::1111"),
    ],
)
def test_host_literal(host, address):
    assert host_literal(host) == address


@pytest.mark.parametrize(
    "host",
    ["example.com", "localhost", "abc", "cafe", "0xcafe.example.com", "1.2.3.4.", "1.2.3.4.5",
     "256.0.0.1", "0x100000000", "08.0.0.1", "127.0.0.1 x", " 127.0.0.1", "127.0.0.1\x00",
     "\u0661\u0662\u0667.0.0.1", "[127.0.0.1]", "[example.com]", "[::1", "::1]", "", "[]",
     "xn--nxasmq6b"],
)
def test_dns_names_are_not_literals(host):
    assert host_literal(host) is None


@pytest.mark.parametrize(
    ("host", "reason"),
    [("2130706433", "loopback"), ("0x7f.1", "loopback"), ("0xa9fea9fe", "cloud metadata"),
     ("[::ffff:127.0.0.1]", "IPv4-mapped loopback"), ("012.1", "private"), ("0", "unspecified")],
)
def test_literal_forms_are_caught_once_canonical(host, reason):
    assert forbidden_reason(host_literal(host)) == reason


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_handled(text):
    reason = forbidden_reason(text)
    assert reason is None or reason
    literal = host_literal(text)
    assert literal is None or ipaddress.ip_address(literal)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)))
def test_allowed_addresses_are_global_unicast(ip):
    allowed = forbidden_reason(str(ip)) is None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    elif ip.version == 6 and ip in ipaddress.IPv6Network("64:ff9b::/96"):
        ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    elif ip.version == 6 and ip.sixtofour is not None:
        ip = ip.sixtofour
    if allowed:
        assert ip.is_global
        assert not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                    or ip.is_unspecified or ip.is_reserved)


@settings(max_examples=200, deadline=None)
@given(st.ip_addresses(v=4))
def test_embedded_ipv4_follows_the_ipv4_verdict(ip):
    reason = forbidden_reason(str(ip))
    mapped = forbidden_reason(f"::ffff:{ip}")
    assert mapped == (None if reason is None else f"IPv4-mapped {reason}")
    nat64 = forbidden_reason(str(ipaddress.IPv6Address(f"64:ff9b::{ip}")))
    assert nat64 == (None if reason is None else f"NAT64 {reason}")
    sixtofour = forbidden_reason(str(ipaddress.IPv6Address((0x2002 << 112) | int(ip) << 80 | 1)))
    assert sixtofour == (None if reason is None else f"6to4 {reason}")


def _resolver(*addresses):
    def resolve(host, port, type=None):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
                for address in addresses]
    return resolve


def _unresolvable(host, port, type=None):
    raise socket.gaierror(-2, "Name or service not known")


@pytest.mark.parametrize(
    ("url", "resolve", "reason"),
    [
        ("http://127.0.0.1/x", _unresolvable, "127.0.0.1 resolves to 127.0.0.1 (loopback)"),
        ("http://[::1]:8080/x", _unresolvable, "::1 resolves to ::1 (loopback)"),
        ("http://2130706433/x", _unresolvable, "2130706433 resolves to 127.0.0.1 (loopback)"),
        ("http://hooks.test/x", _resolver("93.184.216.34", "10.0.0.7"),
         "hooks.test resolves to 10.0.0.7 (private)"),
        ("https://meta.test/x", _resolver("169.254.169.254"),
         "meta.test resolves to 169.254.169.254 (cloud metadata)"),
    ],
)
def test_endpoint_refusal_names_the_address_and_the_reason(url, resolve, reason):
    refused = endpoint_refusal(url, resolve=resolve)
    assert refused.startswith(reason)
    assert refused.endswith("WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS=true to allow private endpoints")


@pytest.mark.parametrize(
    ("url", "resolve"),
    [
        ("http://hooks.test/x", _resolver("93.184.216.34")),
        ("http://hooks.test/x", _unresolvable),  # left to the guard at send time
        ("http://93.184.216.34:8443/x", _unresolvable),
        ("not a url", _unresolvable),
        ("http://[::1/x", _unresolvable),  # malformed: left to the URL check
        ("http:///x", _unresolvable),
    ],
)
def test_endpoint_refusal_lets_public_unknown_and_malformed_urls_pass(url, resolve):
    assert endpoint_refusal(url, resolve=resolve) is None


def test_endpoint_refusal_resolves_the_port_the_scheme_implies():
    asked = []

    def resolve(host, port, type=None):
        asked.append((host, port))
        return _resolver("93.184.216.34")(host, port)

    endpoint_refusal("https://a.test/x", resolve=resolve)
    endpoint_refusal("http://b.test/x", resolve=resolve)
    endpoint_refusal("http://c.test:81/x", resolve=resolve)
    assert asked == [("a.test", 443), ("b.test", 80), ("c.test", 81)]

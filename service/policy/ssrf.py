"""Refuse to send webhooks to addresses inside the network (SSRF protection)."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Checked in order: the first network holding the address names the reason.
_IPV4_FORBIDDEN = tuple(
    (ipaddress.IPv4Network(network), reason)
    for network, reason in (
        ("169.254.169.254/32", "cloud metadata"),
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "this network"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("169.254.0.0/16", "link-local"),
        ("100.64.0.0/10", "shared address space"),
        ("198.18.0.0/15", "benchmarking"),
        ("192.0.2.0/24", "documentation"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("192.0.0.0/24", "reserved"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_IPV6_FORBIDDEN = tuple(
    (ipaddress.IPv6Network(network), reason)
    for network, reason in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fd00:ec2::254/128", "cloud metadata"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("fc00::/7", "unique-local"),
        ("ff00::/8", "multicast"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("2001::/32", "teredo"),
        ("2001:2::/48", "benchmarking"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
    )
)


def _low32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def _sixtofour(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) >> 80 & 0xFFFFFFFF)


# IPv6 ranges that carry an IPv4 address: (range, name, embedded address, public allowed).
_EMBEDDING = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), "IPv4-mapped", _low32, True),
    (ipaddress.IPv6Network("64:ff9b::/96"), "NAT64", _low32, True),
    (ipaddress.IPv6Network("2002::/16"), "6to4", _sixtofour, True),
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible", _low32, False),
)


def _reason(ip: IPAddress) -> str | None:
    table = _IPV4_FORBIDDEN if ip.version == 4 else _IPV6_FORBIDDEN
    for network, reason in table:
        if ip in network:
            return reason
    if isinstance(ip, ipaddress.IPv6Address):
        for network, name, embedded, public_allowed in _EMBEDDING:
            if ip in network:
                inner = _reason(embedded(ip))
                if inner is None and public_allowed:
                    return None
                return f"{name} {inner or 'address'}"
    return None if ip.is_global and not ip.is_reserved else "reserved"


def forbidden_reason(address: str) -> str | None:
    """Return why a webhook must not go to `address`, or None for a public unicast IP."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    return _reason(ip)


def refusal(host: str, addresses: Iterable[str]) -> str | None:
    """Return why webhooks must not go to `host`, which resolves to `addresses`, or None.

    One address that is not public is enough: the resolver may hand out any of them.
    """
    for address in addresses:
        reason = forbidden_reason(address)
        if reason:
            return (f"{host} resolves to {address} ({reason}); set "
                    "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS=true to allow private endpoints")
    return None


def endpoint_refusal(url: str, resolve: Callable[..., list] = socket.getaddrinfo) -> str | None:
    """Return why the send-time guard would refuse `url`, or None when it may pass.

    A URL that does not parse, or a host that does not resolve now, is left to the other
    checks and to the guard at send time (DNS may change by then; the guard decides).
    """
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not host:
        return None
    literal = host_literal(host)
    if literal is not None:
        return refusal(host, [literal])
    try:
        infos = resolve(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    return refusal(host, dict.fromkeys(info[4][0] for info in infos))


_INET_ATON_CHARS = re.compile(r"[0-9a-fA-FxX.]+")


def host_literal(host: str) -> str | None:
    """Return the canonical IP of `host` if the resolver would read it as an IP, else None."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif _INET_ATON_CHARS.fullmatch(host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    try:
        return str(ipaddress.IPv6Address(host))
    except ValueError:
        return None

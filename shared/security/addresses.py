"""Which network addresses an outbound connection may reach: the one rule for the sandbox's egress,
webhook callbacks and web fetches.

Loopback, private, link-local, multicast, reserved and unspecified addresses are inside the house (the
host, the stack's services, the home network, a cloud's metadata endpoint) and are refused unless the
operator lists them in an allow setting (comma-separated host names or CIDRs). A name is judged by what
it resolves to at the moment of the connection, so a name that changes its answer (DNS rebinding) is
judged on the address actually used: callers connect to the address `resolve` returned, never to the
name again.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from shared.errors import Forbidden

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

# Ranges that are not "the internet" although ipaddress' own flags miss them.
EXTRA_INTERNAL = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10",    # carrier-grade NAT, also Tailscale's addresses
    "192.0.0.0/24",     # IETF protocol assignments
    "198.18.0.0/15",    # benchmarking
    "64:ff9b:1::/48",   # local-use NAT64
))


class AddressRefused(Forbidden):
    """The destination is inside the house and not allowed by the operator."""

    code = "address_refused"


@dataclass(frozen=True)
class Allowlist:
    """Hosts and networks an operator lets a connection reach although they are internal."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, raw: str | None) -> Allowlist:
        """`"nas.lan, 192.168.1.0/24, ::1"` → an Allowlist; a bad entry raises ValueError naming it."""
        hosts, networks = set(), []
        for item in (raw or "").split(","):
            item = item.strip().lower().rstrip(".")
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                if not _is_hostname(item):
                    raise ValueError(f"not a host name or CIDR: {item!r}") from None
                hosts.add(item)
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows_address(self, address: Address) -> bool:
        return any(address in net for net in self.networks if net.version == address.version)


def _is_hostname(text: str) -> bool:
    labels = text.split(".")
    return 0 < len(text) <= 253 and all(
        0 < len(label) <= 63 and label.replace("-", "").replace("_", "").isalnum() and label.isascii()
        for label in labels)


def as_address(text: str) -> Address | None:
    """The address a literal names (IPv4-mapped IPv6 unwrapped, zone ids dropped), or None for a name."""
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def internal_reason(address: Address) -> str | None:
    """Why an address is inside the house ("loopback", "private", …), or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour is not None:
        return internal_reason(address.sixtofour)
    for reason, flag in (("loopback", address.is_loopback), ("link-local", address.is_link_local),
                         ("multicast", address.is_multicast), ("unspecified", address.is_unspecified),
                         ("private", address.is_private), ("reserved", address.is_reserved)):
        if flag:
            return reason
    if any(address in net for net in EXTRA_INTERNAL if net.version == address.version):
        return "private"
    return None


def refusal(host: str, address: Address, allow: Allowlist, stack_hosts: Iterable[str] = ()) -> str | None:
    """Why a connection to `address` (reached as `host`) is refused, or None when it may go."""
    name = host.lower().rstrip(".")
    if name in {h.lower() for h in stack_hosts} and not allow.allows_host(name):
        return f"{host} is one of the stack's own services"
    reason = internal_reason(address)
    if reason is None or allow.allows_host(name) or allow.allows_address(address):
        return None
    return f"{host} resolves to {address}, a {reason} address"


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host (both families)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def resolve(host: str, port: int, allow: Allowlist, *, stack_hosts: Iterable[str] = (),
            resolver: Resolver = system_resolver) -> list[Address]:
    """The addresses to connect to for host:port, or AddressRefused when any of them is internal.

    All answers must pass, not just one: a name that resolves to a public and a loopback address would
    otherwise let the connection's own choice of address decide."""
    literal = as_address(host)
    try:
        found = [literal] if literal is not None else [as_address(a) for a in resolver(host, port)]
    except (OSError, UnicodeError) as exc:
        raise AddressRefused(f"{host} could not be resolved ({exc})") from exc
    found = [a for a in found if a is not None]
    if not found:
        raise AddressRefused(f"{host} has no address")
    for address in found:
        reason = refusal(host, address, allow, stack_hosts)
        if reason:
            raise AddressRefused(f"{reason}; the operator may allow it")
    return found

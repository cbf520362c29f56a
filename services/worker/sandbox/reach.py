"""What a sandbox's outbound connection may reach: addresses.resolve's rule plus the stack's own endpoints."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.security.addresses import (Address, AddressRefused, Allowlist, Resolver, as_address, internal_reason,
                                       resolve, system_resolver)
from shared.security.stack_hosts import WILDCARDS


@dataclass(frozen=True)
class Reach:
    """TERMINAL_NETWORK_ALLOW and the stack's hosts and endpoints, as one value a sandbox carries."""

    allow: Allowlist = field(default_factory=Allowlist)
    stack_hosts: tuple[str, ...] = ()
    stack_endpoints: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_settings(cls, settings) -> Reach:
        from shared.security.stack_hosts import stack_endpoints, stack_hosts

        return cls(Allowlist.parse(settings.terminal_network_allow), stack_hosts(settings), stack_endpoints(settings))

    def addresses(self, host: str, port: int, resolver: Resolver = system_resolver) -> list[Address]:
        """The addresses to connect to for host:port, or AddressRefused saying why not."""
        name = host.lower().rstrip(".")
        if name in self.stack_hosts and not self.allow.allows_host(name):
            raise AddressRefused(f"{host} is one of the stack's own services")
        found = resolve(host, port, self.allow, stack_hosts=self.stack_hosts, resolver=resolver)
        for address in found:
            service = self.stack_service(address, port, resolver)
            if service is not None:
                literal = as_address(service) is not None or service in WILDCARDS
                how = "it stays refused" if literal else f"name {service} to allow it"
                raise AddressRefused(f"{host}:{port} is the stack's own service at {service}:{port}; {how}")
        return found

    def stack_service(self, address: Address, port: int, resolver: Resolver) -> str | None:
        """The stack host listening at address:port, unless the operator named that host in the allow list."""
        for host, service_port in self.stack_endpoints:
            if service_port != port or self.allow.allows_host(host):
                continue
            if host in WILDCARDS:
                if internal_reason(address) is not None:
                    return host or "0.0.0.0"
            elif address in _addresses_of(host, port, resolver):
                return host
        return None


def _addresses_of(host: str, port: int, resolver: Resolver) -> set[Address]:
    literal = as_address(host)
    if literal is not None:
        return {literal}
    try:
        return {a for a in (as_address(x) for x in resolver(host, port)) if a is not None}
    except (OSError, UnicodeError):
        return set()

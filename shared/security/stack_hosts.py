"""The stack's own services as destinations an outbound connection must not reach.

Two views: the names (the compose service names and the hosts of REDIS_URL, DATABASE_URL, the api and the
gateway), refused whatever they resolve to; and the endpoints (host and port of each of those services),
refused even when the operator allows their address for something else, so allowing 127.0.0.1 for a
local test server does not open the local Redis or database with it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from shared.security.addresses import as_address

COMPOSE_SERVICES = ("redis", "postgres", "api", "gateway", "worker", "reviewer", "curator")
WILDCARDS = {"", "0.0.0.0", "::"}
DEFAULT_PORTS = {"redis": 6379, "rediss": 6379, "postgresql": 5432, "postgres": 5432}


def url_endpoint(url: str | None) -> tuple[str, int] | None:
    """(host, port) of a service URL, the scheme's default port when none is written; None without a host."""
    if not url:
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.hostname.lower(), port


def stack_endpoints(settings) -> tuple[tuple[str, int], ...]:
    """Where the stack's Redis, database, api and gateway listen, as this process knows them."""
    found = [url_endpoint(settings.redis_url), url_endpoint(settings.database_url),
             url_endpoint(settings.gateway_api_url), (settings.api_host.lower(), settings.api_port),
             (settings.gateway_host.lower(), settings.gateway_port)]
    return tuple(dict.fromkeys(e for e in found if e is not None))


def stack_hosts(settings) -> tuple[str, ...]:
    """Names that are the stack's own hosts whatever they resolve to (addresses are judged as addresses)."""
    names = [*COMPOSE_SERVICES, *(host for host, _ in stack_endpoints(settings))]
    return tuple(dict.fromkeys(n for n in names if n not in WILDCARDS and as_address(n) is None))

"""Who a request came from: the socket peer, or what a trusted proxy (TRUSTED_PROXIES) says it forwarded.

uvicorn would believe X-Forwarded-For from any loopback peer, so one local client could name itself anew
on every request; every launcher passes --no-proxy-headers and the app trusts only the proxies the
operator lists. An IPv6 client counts by its /64, the block one host is usually given.
"""

from __future__ import annotations

import ipaddress

from fastapi import FastAPI
from starlette.types import Scope
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from shared.config import Settings

IPV6_PREFIX = 64


def client_address(scope: Scope) -> str:
    """The address requests are counted against: the client's IPv4 address or its IPv6 /64."""
    client = scope.get("client")
    host = client[0] if client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host or "unknown"
    if address.version == 4:
        return str(address)
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))


def trust_proxies(app: FastAPI, settings: Settings) -> None:
    """Read X-Forwarded-For and X-Forwarded-Proto only from the listed proxies (none by default)."""
    proxies = [part.strip() for part in settings.trusted_proxies.split(",") if part.strip()]
    if proxies:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=proxies)

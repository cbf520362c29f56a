"""A streamable-HTTP MCP server reached under the web tools' address rules.

Before each connection the server's host is judged as web_extract judges a page's (shared/http/fetch.py's
rule: a loopback, private or link-local address, or one of the stack's own services, is refused unless
MCP_ALLOW lists it). The SDK's client then speaks to it, following redirects only within the same origin.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from shared.config import Settings
from shared.http.fetch import stack_hosts
from shared.security.addresses import Address, Allowlist, AddressRefused, Resolver, resolve, system_resolver


def checked(url: str, settings: Settings, resolver: Resolver = system_resolver) -> list[Address]:
    """The addresses `url` reaches, or AddressRefused when any is inside the house and not in MCP_ALLOW."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused(f"an MCP server URL must be http or https, not {url[:100]!r}")
    if parts.username or parts.password:
        raise AddressRefused("an MCP server URL may not carry credentials; use headers")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return resolve(parts.hostname, port, Allowlist.parse(settings.mcp_allow), stack_hosts=stack_hosts(settings),
                   resolver=resolver)


@asynccontextmanager
async def streams(url: str, headers: dict[str, str] | None, settings: Settings) -> AsyncIterator[tuple]:
    """(read, write) streams for a ClientSession with the server at `url`, its address judged first."""
    await anyio.to_thread.run_sync(checked, url, settings)
    timeout = httpx2.Timeout(settings.mcp_connect_timeout_seconds, read=settings.mcp_call_timeout_seconds)
    async with httpx2.AsyncClient(headers=headers or {}, timeout=timeout, trust_env=False,
                                  follow_redirects=False) as client:
        async with streamable_http_client(url, http_client=client) as pair:
            yield pair

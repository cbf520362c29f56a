"""POSTs to webhook callback URLs, only to addresses the operator allows.

The host is resolved at send time and every address it gives is judged (shared/security/callback_targets.py);
the request then goes to the judged address itself, with the URL's host in the Host header and as the TLS
server name, so a name that answers differently a moment later (DNS rebinding) changes nothing.
Redirects are not followed: a redirect could point anywhere.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

import httpx

from shared.security.addresses import Allowlist
from shared.security.callback_targets import allowed_addresses

TIMEOUT_SECONDS = 10.0


class CallbackSender:
    """One client for every callback; each POST goes to an address checked just before it."""

    def __init__(self, allow: Allowlist) -> None:
        self.allow = allow
        self.http = httpx.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        """POST to the allowed addresses of the URL's host in turn until one connects; AddressRefused when the host
        is not allowed."""
        addresses = await asyncio.to_thread(allowed_addresses, url, self.allow)
        parts = urlsplit(url)
        host = parts.hostname or ""
        headers = {**headers, "Host": _netloc(host, parts.port)}
        for address in addresses:
            pinned = urlunsplit((parts.scheme, _netloc(str(address), parts.port), parts.path or "/", parts.query, ""))
            try:
                return await self.http.post(pinned, content=body, headers=headers, extensions={"sni_hostname": host})
            except httpx.ConnectError:
                if address == addresses[-1]:
                    raise
        raise AssertionError("resolve answers at least one address")


def _netloc(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown

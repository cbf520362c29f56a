"""One web page fetched for the agent without reaching inside the house.

Every hop of a redirect is judged by shared/security/addresses.py and the connection goes to the address
that judgement returned (the name is never resolved again by the client, so a rebinding answer cannot
slip in between). The body is streamed and cut at a byte cap, never held whole. Each fetch uses a fresh
client that ignores the environment (no proxy settings, no .netrc) and sends no cookies or headers of the
worker's own beyond a plain user agent.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import urljoin, urlsplit

import httpx

from shared.config import Settings
from shared.errors import BadRequest
from shared.http import tls
from shared.security.addresses import Address, Allowlist, Resolver, as_address, resolve, system_resolver

MAX_REDIRECTS = 5
REDIRECTS = {301, 302, 303, 307, 308}
USER_AGENT = "Mozilla/5.0 (compatible; hermes-stack web_extract)"
CHUNK = 64 * 1024
# The stack's own services by their compose names: refused unless the operator lists them.
SERVICE_HOSTS = ("api", "worker", "reviewer", "curator", "curator-beat", "gateway", "redis", "postgres")


class FetchFailed(BadRequest):
    """The page could not be fetched (bad URL, status, timeout, too many redirects)."""

    code = "fetch_failed"


class UnsupportedContent(FetchFailed):
    """The page is neither HTML, plain text nor PDF."""

    code = "unsupported_content"


@dataclass(frozen=True)
class Page:
    """What came back: the final URL after redirects, its status and type, and the (maybe cut) body."""

    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool


def stack_hosts(settings: Settings) -> tuple[str, ...]:
    """Names of the stack's own services and stores, from the compose names and the settings."""
    hosts = set(SERVICE_HOSTS)
    for url in (settings.redis_url, settings.database_url, settings.gateway_api_url, settings.api_url):
        host = urlsplit(url or "").hostname
        if host and as_address(host) is None:  # an address literal is judged by its range instead
            hosts.add(host)
    return tuple(sorted(hosts))


class Fetcher:
    """Fetches pages under one settings' rules; tests pass a resolver of their own."""

    def __init__(self, settings: Settings, *, resolver: Resolver = system_resolver,
                 cancelled: Callable[[], bool] = lambda: False) -> None:
        self.allow = Allowlist.parse(settings.web_fetch_allow)
        self.stack_hosts: Iterable[str] = stack_hosts(settings)
        self.max_bytes = settings.web_fetch_max_bytes
        self.timeout = settings.web_fetch_timeout_seconds
        self.resolver = resolver
        self.cancelled = cancelled

    def fetch(self, url: str) -> Page:
        """GET `url`, following up to MAX_REDIRECTS redirects, each hop checked; AddressRefused inside the house."""
        deadline = time.monotonic() + self.timeout
        with httpx.Client(trust_env=False, verify=tls.verified(False), follow_redirects=False,
                          timeout=self.timeout) as client:
            for _ in range(MAX_REDIRECTS + 1):
                page, location = self.hop(client, url, deadline)
                if location is None:
                    return page
                url = location
        raise FetchFailed(f"More than {MAX_REDIRECTS} redirects.")

    def hop(self, client: httpx.Client, url: str, deadline: float) -> tuple[Page, str | None]:
        """One request: the page, and where it redirects to (None when it does not)."""
        parts = _checked_url(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = resolve(parts.hostname, port, self.allow, stack_hosts=self.stack_hosts, resolver=self.resolver)[0]
        client.cookies.clear()  # a cookie one hop set never rides along to the next
        try:
            with client.stream("GET", _pinned(parts, address, port), headers=_headers(parts),
                               extensions={"sni_hostname": parts.hostname}) as response:
                if response.status_code in REDIRECTS and "location" in response.headers:
                    return _empty(url, response), urljoin(url, response.headers["location"])
                if response.status_code >= 400:
                    raise FetchFailed(f"{url} answered HTTP {response.status_code}.")
                body, truncated = self.read(response, deadline)
        except httpx.HTTPError as exc:
            raise FetchFailed(f"{url} could not be fetched: {type(exc).__name__}.") from exc
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        return Page(url, response.status_code, content_type, body, truncated), None

    def read(self, response: httpx.Response, deadline: float) -> tuple[bytes, bool]:
        """The body up to the byte cap (True when cut there); stops at the deadline or a cancel.

        Compressed bodies are inflated here, never past the room left, so a small compressed body that
        inflates to gigabytes costs no more memory than the cap."""
        inflate = _inflater(response.headers.get("content-encoding", ""))
        chunks, size = [], 0
        for raw in response.iter_raw(CHUNK):
            if self.cancelled() or time.monotonic() > deadline:
                raise FetchFailed(f"{response.request.url.host} took longer than {self.timeout:g} s.")
            room = self.max_bytes - size
            chunk = raw if inflate is None else inflate.decompress(raw, room + 1)
            chunks.append(chunk[:room])
            size += min(len(chunk), room)
            if len(chunk) > room or (inflate is not None and inflate.unconsumed_tail):
                return b"".join(chunks), True
        return b"".join(chunks), False


def _inflater(encoding: str):
    """A bounded inflater for gzip or deflate, None for an uncompressed body; FetchFailed for any other coding."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
    raise FetchFailed(f"The page is sent with a content coding web_extract does not read ({encoding[:40]}).")


def _checked_url(url: str):
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchFailed(f"Only http and https URLs can be fetched, not {url[:200]!r}.")
    if parts.username or parts.password:
        raise FetchFailed("URLs with credentials are not fetched.")
    return parts


def _pinned(parts, address: Address, port: int) -> str:
    """The URL with its host replaced by the judged address (the Host header and SNI keep the name)."""
    host = f"[{address}]" if address.version == 6 else str(address)
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{host}:{port}{path}{query}"


def _headers(parts) -> dict[str, str]:
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    return {"Host": host, "User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate",
            "Accept": "text/html, text/plain, application/pdf;q=0.9, */*;q=0.5"}


def _empty(url: str, response: httpx.Response) -> Page:
    return Page(url, response.status_code, "", b"", False)

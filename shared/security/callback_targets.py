"""Where a webhook callback URL may send replies: http(s) to an address WEBHOOK_CALLBACK_ALLOW lets through
(shared/security/addresses.py judges every address the host resolves to)."""

from __future__ import annotations

from urllib.parse import urlsplit

from shared.security.addresses import Address, AddressRefused, Allowlist, Resolver, resolve, system_resolver

# The compose services' names: judged as the stack's own even if they resolved to a public address.
STACK_HOSTS = ("api", "worker", "reviewer", "curator", "gateway", "redis", "postgres", "demo-model", "migrate")


def target(url: str) -> tuple[str, int]:
    """(host, port) of a callback URL; AddressRefused when it is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise AddressRefused(f"the callback URL is malformed ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused("the callback URL must be http(s) with a host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def allowed_addresses(url: str, allow: Allowlist, resolver: Resolver = system_resolver) -> list[Address]:
    """The addresses a callback to `url` may connect to now, or AddressRefused saying why none."""
    host, port = target(url)
    return resolve(host, port, allow, stack_hosts=STACK_HOSTS, resolver=resolver)


def refusal(url: str | None, allow_setting: str, resolver: Resolver = system_resolver) -> str | None:
    """Why replies to `url` would be refused now under WEBHOOK_CALLBACK_ALLOW (said when a route is created),
    or None (no callback, or an allowed one)."""
    if not url:
        return None
    try:
        allowed_addresses(url, Allowlist.parse(allow_setting), resolver)
    except AddressRefused as exc:
        return f"Replies to this callback would be refused: {exc.message} (WEBHOOK_CALLBACK_ALLOW)."
    return None

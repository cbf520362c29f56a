"""Reading a proxy request's head: CONNECT host:port (TLS and any TCP) or an absolute-form plain HTTP request."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# Headers meant for the proxy, or for this one connection only: never passed on.
HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}
HOST = re.compile(r"[A-Za-z0-9._:-]{1,253}")  # a name or an address literal; nothing a resolver chokes on


class BadHead(ValueError):
    """The request is not one this proxy serves; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where a request goes, and what to send there first (nothing for CONNECT)."""

    host: str
    port: int
    tunnel: bool
    first_bytes: bytes = b""


def parse(head: bytes) -> Target:
    """The target of a request head (the bytes up to and including the blank line)."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise BadHead("the request line is not `METHOD TARGET HTTP/1.x`") from None
    if not version.startswith("HTTP/1."):
        raise BadHead(f"unsupported protocol {version!r}")
    if method == "CONNECT":
        host, port = split_authority(target)
        return Target(checked(host), port, tunnel=True)
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise BadHead("only CONNECT and absolute http:// URLs are proxied (https goes through CONNECT)")
    try:
        port = parts.port or 80
    except ValueError:
        raise BadHead(f"bad port in {parts.netloc!r}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request_line = f"{method} {path} {version}".encode("ascii")
    kept = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in HOP_HEADERS]
    first = b"\r\n".join([request_line, *kept, b"Connection: close", b"", b""])
    return Target(checked(parts.hostname), port, tunnel=False, first_bytes=first)


def checked(host: str) -> str:
    if not HOST.fullmatch(host):
        raise BadHead(f"not a host name or address: {host[:80]!r}")
    return host


def split_authority(authority: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` → (host, port); the port is required and must be 1..65535."""
    host, sep, port_text = authority.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadHead(f"CONNECT needs host:port, not {authority!r}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise BadHead(f"bad address {host!r}")
        host = host[1:-1]
    elif ":" in host:
        raise BadHead(f"an IPv6 address is written in brackets, not {host!r}")
    return host.lower(), int(port_text)

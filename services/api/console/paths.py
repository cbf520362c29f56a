"""Which request paths belong to the console (they get HTML errors and the console's security headers)."""

from __future__ import annotations

PREFIXES = ("/signin", "/signout", "/chat", "/search", "/memory", "/skills", "/learning", "/owner",
            "/static/console")
STATIC_PREFIX = "/static/console"


def is_console_path(path: str) -> bool:
    return path == "/" or any(path == p or path.startswith(p + "/") for p in PREFIXES)

"""What a pipeline of echo/printf/cat/base64 -d/xxd -r/rev writes, when it is known before it runs."""

from __future__ import annotations

import re

from .commands import Cmd
from .words import decode_base64, decode_hex, echo_escapes

DECODERS = {"base64", "xxd", "openssl", "rev", "printf"}


def evaluate(stages: list[Cmd]) -> str | None:
    """The output of a pipeline of echo/printf/base64 -d/xxd -r/rev, or None when it is not static."""
    data: str | None = None
    for cmd in stages:
        here = next((t for op, t in cmd.redirects if op == "<<<"), None)
        body = next((t for op, t in cmd.redirects if op == "<<body"), None)
        if here is not None:
            data = here + "\n"
        elif body is not None:
            data = body + "\n"
        name, args = cmd.name, cmd.argv[1:]
        flags = {a for a in args if a.startswith("-")}
        plain = [a for a in args if not a.startswith("-")]
        if name == "echo":
            data = echo_escapes(" ".join(plain)) + ("" if "-n" in flags else "\n")
        elif name == "printf":
            data = echo_escapes(plain[0] if plain else "")
            for value in plain[1:]:
                data = re.sub(r"%[sb]", lambda _m, v=value: v, data, count=1)
        elif name == "cat" and not plain:
            pass
        elif name == "base64" and flags & {"-d", "--decode", "-D", "-di", "-id"}:
            data = decode_base64(data) if data is not None else None
        elif name == "openssl" and "-d" in flags and ("base64" in args or "-base64" in flags or "-a" in flags):
            data = decode_base64(data) if data is not None else None
        elif name == "xxd" and any("r" in f for f in flags):
            data = decode_hex(data) if data is not None else None
        elif name == "rev" and data is not None:
            data = "\n".join(line[::-1] for line in data.rstrip("\n").split("\n")) + "\n"
        else:
            return None
        if data is None:
            return None
    return data

"""Public identifiers: a type prefix plus a time-ordered random part."""

from __future__ import annotations

import os
import secrets
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


_lock = threading.Lock()
_last = (0, 0)


def new_id(prefix: str) -> str:
    """`<prefix>_` + 10 chars of milliseconds + 16 random chars; monotonic within a process."""
    global _last
    with _lock:
        millis = int(time.time() * 1000)
        if millis <= _last[0]:
            millis, rand = _last[0], _last[1] + 1  # same millisecond: keep the order of creation
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 2
        _last = (millis, rand)
    return f"{prefix}_{_base32(millis, 10)}{_base32(rand, 16)}"


def new_api_key() -> str:
    """A bearer key with 256 bits of entropy."""
    return "hsk_" + secrets.token_urlsafe(32)

"""Public identifiers: a type prefix plus a time-ordered random part."""

from __future__ import annotations

import os
import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """`<prefix>_` + 10 chars of milliseconds + 16 random chars (sortable by creation time)."""
    millis = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_base32(millis, 10)}{_base32(rand, 16)}"


def new_api_key() -> str:
    """A bearer key with 256 bits of entropy."""
    return "hsk_" + secrets.token_urlsafe(32)

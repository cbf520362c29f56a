"""Public identifiers: a type prefix plus a millisecond timestamp and fresh randomness."""

from __future__ import annotations

import os
import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
RANDOM_BITS = 80  # 16 base32 characters


def _base32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """`<prefix>_` + 10 chars of milliseconds + 16 random chars.

    Ids sort by their millisecond; within one millisecond their order is random, so an id never
    reveals its neighbour (no incremented counter). Order by a real column when creation order matters.
    """
    millis = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(RANDOM_BITS // 8), "big")
    return f"{prefix}_{_base32(millis, 10)}{_base32(rand, 16)}"


def new_api_key() -> str:
    """A bearer key with 256 bits of entropy."""
    return "hsk_" + secrets.token_urlsafe(32)

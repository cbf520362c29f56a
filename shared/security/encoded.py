"""Text hidden in base64 or hex runs, decoded so the scanner can read it too.

Only runs that decode to readable UTF-8 text count (a git hash or a random token decodes to bytes
that are not text and is left alone). The work is bounded: at most MAX_RUNS runs per text, each cut
to MAX_RUN_CHARS, and the caller decodes at most MAX_DEPTH levels deep (base64 of hex of base64…).
"""

from __future__ import annotations

import base64
import binascii
import re

MAX_RUNS = 8
MAX_RUN_CHARS = 4096
MAX_DEPTH = 2
MIN_TEXT_BYTES = 6
PRINTABLE_SHARE = 0.9

_BASE64 = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![\w+/=-])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:0x)?(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_HEX_SPACED = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :,]){7,}[0-9A-Fa-f]{2}(?![0-9A-Fa-f])")
_HEX_ESCAPED = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}")


def decoded_runs(text: str) -> list[tuple[str, str]]:
    """(kind, decoded text) for each base64 or hex run of `text` that decodes to readable text."""
    found: list[tuple[str, str]] = []
    for kind, regex, decode in (("hex", _HEX_ESCAPED, _unescape_hex), ("hex", _HEX_SPACED, _spaced_hex),
                                ("hex", _HEX, _hex), ("base64", _BASE64, _base64)):
        for match in regex.finditer(text):
            if len(found) >= MAX_RUNS:
                return found
            decoded = _readable(decode(match.group()[:MAX_RUN_CHARS]))
            if decoded is not None and (kind, decoded) not in found:
                found.append((kind, decoded))
    return found


def _hex(run: str) -> bytes | None:
    digits = run[2:] if run[:2].lower() == "0x" else run
    try:
        return bytes.fromhex(digits[: len(digits) // 2 * 2])
    except ValueError:
        return None


def _spaced_hex(run: str) -> bytes | None:
    return _hex(re.sub(r"[ :,]", "", run))


def _unescape_hex(run: str) -> bytes | None:
    return _hex(run.replace("\\x", "").replace("\\X", ""))


def _base64(run: str) -> bytes | None:
    if run.isalpha() or run.isdigit():  # a long plain word or number, not an encoding
        return None
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    body = body[: len(body) - len(body) % 4 if len(body) % 4 == 1 else len(body)]
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _readable(raw: bytes | None) -> str | None:
    """The bytes as text when they are UTF-8 and nearly all printable; else None."""
    if raw is None or len(raw) < MIN_TEXT_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\t\r")
    return text if printable >= PRINTABLE_SHARE * len(text) and any(ch.isalpha() for ch in text) else None

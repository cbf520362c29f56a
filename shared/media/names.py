"""File names from users made safe to store: one plain name, bounded, never a path.

A name arrives from a header, a chat platform or a form: it may hold `../`, slashes of either kind, NUL and
other control characters, or be a thousand characters long. What is kept is the last path component with
those removed, no leading dots (no hidden file, no `..`), at most MAX_NAME_BYTES of UTF-8 with the extension
kept, and the sniffed type's extension when the name had none.
"""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_BYTES = 120
MAX_EXTENSION_CHARS = 10
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\/]')


def safe_name(raw: str | None, extension: str = "", fallback: str = "file") -> str:
    """A safe, bounded file name for `raw`; `extension` (no dot) is added when the name has none."""
    name = unicodedata.normalize("NFC", raw or "")
    name = re.split(r"[\\/]", name)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C" or ch == " ")
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    name = re.sub(r"\s+", " ", name)
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) > MAX_EXTENSION_CHARS or not ext.isalnum():
        stem, ext = name, ""
    ext = ext or extension
    stem = _cut(stem or fallback, MAX_NAME_BYTES - len(ext) - 1)
    return f"{stem}.{ext}" if ext else stem


def numbered(name: str, n: int) -> str:
    """`photo.png` -> `photo-2.png`: the next free name when one is taken."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        return _cut(name, MAX_NAME_BYTES - 4) + f"-{n}"
    return f"{_cut(stem, MAX_NAME_BYTES - len(ext) - 5)}-{n}.{ext}"


def _cut(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` of UTF-8, never inside a character."""
    data = text.encode("utf-8")[:max(max_bytes, 1)]
    return data.decode("utf-8", "ignore").rstrip() or "file"

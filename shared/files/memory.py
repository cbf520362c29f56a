"""The on-disk format of MEMORY.md and USER.md: entries, the lock, atomic writes, drift backups.

A file is its entries joined by `\\n§\\n` with no trailing newline. Readers take no lock and rely on
the atomic rename; writers hold an exclusive flock on `<file>.lock` across re-read, change and write.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from shared.files.atomic import atomic_write
from shared.errors import InvalidInput

DELIMITER = "\n§\n"
FILE_NAMES = {"memory": "MEMORY.md", "user": "USER.md"}
_USER_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def memory_dir(data_dir: Path, user_id: str) -> Path:
    """`DATA_DIR/users/<user_id>/memories`; an id that could name another directory is refused."""
    if not _USER_ID.match(user_id or ""):
        raise InvalidInput("Invalid user id.")
    return Path(data_dir) / "users" / user_id / "memories"


def split_entries(raw: str) -> list[str]:
    """The entries of a file's text, stripped, empty ones dropped, repeats kept (a write may address them)."""
    return [entry.strip() for entry in raw.split(DELIMITER) if entry.strip()]


def dedupe(entries: list[str]) -> list[str]:
    """Exact repeats dropped, the first one kept."""
    return list(dict.fromkeys(entries))


def render(entries: list[str]) -> str:
    """The file text of these entries; its length is what the char limit counts."""
    return DELIMITER.join(entries)


def read_raw(path: Path) -> str:
    """The file's text, or "" when it does not exist yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def read_entries(path: Path) -> list[str]:
    """The live entries as a reader sees them: split, stripped, de-duplicated."""
    return dedupe(split_entries(read_raw(path)))


def drift_reason(raw: str, limit: int) -> str | None:
    """Why a hand-edited file cannot be rewritten safely, or None when it round-trips."""
    entries = split_entries(raw)
    if render(entries) != raw.strip():
        return "its text does not match its entries joined by a line holding only '§' (extra blank lines, " \
               "spaces around entries or empty entries)"
    longest = max((len(e) for e in entries), default=0)
    if longest > limit:
        return f"one entry is {longest:,} chars, longer than the whole store's limit of {limit:,}"
    return None


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of one memory file (threads and processes alike wait for it)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def write_atomic(path: Path, text: str) -> None:
    """Replace the file with `text` durably, mode 0600."""
    atomic_write(path, text)


def backup(path: Path, raw: str) -> Path:
    """Keep the raw text of a drifted file as `<file>.bak.<unix seconds>`; a copy already kept is reused."""
    for existing in sorted(path.parent.glob(f"{path.name}.bak.*")):
        if read_raw(existing) == raw:
            return existing  # refused retries must not pile up copies of the same text
    target = path.with_name(f"{path.name}.bak.{int(time.time())}")
    write_atomic(target, raw)
    return target

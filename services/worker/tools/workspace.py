"""What the file tools share: finding a workspace path, telling binary from text, walking a tree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from shared.errors import NotFound
from shared.security.paths import resolve_inside
from services.worker.tools.registry import ToolContext

BINARY_SNIFF_BYTES = 8192


def existing(ctx: ToolContext, path: str) -> Path:
    """The real path of something that exists inside the workspace."""
    target = resolve_inside(ctx.workspace, path)
    if not target.exists():
        raise NotFound(f"No such file or directory: {path}")
    return target


def is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(BINARY_SNIFF_BYTES)


def walk(root: Path, start: Path) -> Iterator[Path]:
    """Every entry under `start` in sorted order, never following links out of the workspace."""
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(dirnames + filenames):
            entry = base / name
            if entry.is_symlink() and not entry.resolve().is_relative_to(root):
                continue
            yield entry

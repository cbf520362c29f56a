"""What the file tools share: the open workspace, reading one regular file, walking a tree.

A file tool opens the workspace once, as the worker, then does everything else beneath that
descriptor (services.worker.tools.beneath) acting as the sandbox's uid (identity).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import BinaryIO, Iterator

from shared.errors import InvalidInput
from shared.security.paths import relative_parts
from services.worker.sandbox.stage import hand_over
from services.worker.tools.beneath import READ_FLAGS, Beneath, explained
from services.worker.tools.identity import acting_as, sandbox_uid
from services.worker.tools.registry import ToolContext

BINARY_SNIFF_BYTES = 8192
MAX_WALK_DEPTH = 128  # folders nested deeper are not walked (each level is one open and one frame)
_handed_over: set[str] = set()  # workspaces this process already gave to the sandbox uid


@contextlib.contextmanager
def opened(ctx: ToolContext) -> Iterator[Beneath]:
    """The caller's workspace, held open while this thread acts as the sandbox's uid."""
    uid = sandbox_uid(ctx.settings)
    if uid is not None and str(ctx.workspace) not in _handed_over:
        hand_over(ctx.workspace, uid)  # what the worker wrote as root before, the sandbox uid may now change
        _handed_over.add(str(ctx.workspace))
    fd = os.open(ctx.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if uid is not None and os.fstat(fd).st_uid != uid:
            os.fchown(fd, uid, uid)  # a workspace made by the worker: the sandbox must be able to write in it
        with acting_as(uid):
            yield Beneath(fd)
    finally:
        os.close(fd)


def shown(parts: tuple[str, ...]) -> str:
    """How a workspace path is shown to the model."""
    return "/".join(parts) or "."


def open_regular(ws: Beneath, path: str) -> BinaryIO:
    """A binary reader of one regular file; folders, FIFOs, sockets and links are refused."""
    with explained(path):
        fd = ws.open(relative_parts(path), READ_FLAGS)
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return os.fdopen(fd, "rb")
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise InvalidInput(f"{path} is a directory; use list_files to see what it holds.")
    raise InvalidInput(f"{path} is not a regular file.")


def looks_binary(fh: BinaryIO) -> bool:
    """A NUL byte near the start; the reader is put back where it was."""
    start = fh.tell()
    head = fh.read(BINARY_SNIFF_BYTES)
    fh.seek(start)
    return b"\x00" in head


def walk(ws: Beneath, path: str) -> Iterator[tuple[str, str]]:
    """(workspace path, kind) of every entry under `path` in sorted order, folders before their contents.

    Links are neither listed nor followed; a folder that turns into anything else while it is
    walked is skipped.
    """
    start = relative_parts(path)
    with explained(path):
        mode = ws.lstat(start).st_mode
    if not stat.S_ISDIR(mode):
        yield shown(start), "file" if stat.S_ISREG(mode) else "other"
        return
    yield from _walk_dir(ws, start, MAX_WALK_DEPTH)


def _walk_dir(ws: Beneath, parts: tuple[str, ...], depth: int) -> Iterator[tuple[str, str]]:
    if depth <= 0:
        return
    try:
        entries = ws.entries(parts)
    except OSError:
        return
    for name, kind in entries:
        if kind != "link":
            yield shown((*parts, name)), kind
    for name, kind in entries:
        if kind == "dir":
            yield from _walk_dir(ws, (*parts, name), depth - 1)

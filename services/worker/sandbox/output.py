"""Bounded capture of a command's output: head and tail in memory, the whole of it in a file."""

from __future__ import annotations

import codecs
import os
import uuid
from pathlib import Path

OUTPUT_CHARS = 50_000
OUTPUTS_DIR = (".hstack", "outputs")


def open_in_workspace(workspace: Path, name: str) -> tuple[int, str]:
    """Create `.hstack/outputs/<name>` for writing without following any symlink the user planted."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in OUTPUTS_DIR:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
    finally:
        os.close(fd)
    return out, "/".join((*OUTPUTS_DIR, name))


class Capture:
    """Feed it bytes; it keeps at most `limit` characters plus a file of everything (up to max_file_bytes)."""

    def __init__(self, workspace: Path, *, limit: int = OUTPUT_CHARS, max_file_bytes: int = 1 << 30) -> None:
        self.workspace, self.limit, self.max_file_bytes = workspace, limit, max_file_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.head: list[str] = []
        self.head_len = 0
        self.tail = ""
        self.total = 0
        self.file_fd: int | None = None
        self.file_path: str | None = None
        self.file_bytes = 0

    def feed(self, data: bytes) -> None:
        self._text(self.decoder.decode(data), data)

    def close(self) -> tuple[str, bool, str | None]:
        """(output, truncated, workspace-relative path of the full output or None)."""
        self._text(self.decoder.decode(b"", final=True), b"")
        if self.file_fd is not None:
            os.close(self.file_fd)
            self.file_fd = None
        head = "".join(self.head)
        if self.file_path is None:
            return head, False, None
        half = self.limit // 2
        omitted = self.total - len(head[:half]) - len(self.tail)
        note = f"\n\n[... {omitted} characters omitted; the whole output is in {self.file_path} ...]\n\n"
        return head[:half] + note + self.tail, True, self.file_path

    def _text(self, text: str, raw: bytes) -> None:
        self.total += len(text)
        if self.file_path is None:
            self.head.append(text)
            self.head_len += len(text)
            if self.head_len > self.limit:
                self._spill()
            return
        self._write(raw)
        self.tail = (self.tail + text)[-(self.limit // 2):]

    def _spill(self) -> None:
        """Past the limit: start the file with what we held, keep only the head and a tail in memory."""
        held = "".join(self.head)
        self.file_fd, self.file_path = open_in_workspace(self.workspace, f"{uuid.uuid4().hex[:12]}.log")
        self._write(held.encode("utf-8", errors="replace"))
        self.head = [held[: self.limit // 2]]
        self.tail = held[-(self.limit // 2):]

    def _write(self, data: bytes) -> None:
        room = self.max_file_bytes - self.file_bytes
        if room > 0 and data:
            chunk = data[:room]
            view = memoryview(chunk)
            while view:
                view = view[os.write(self.file_fd, view):]
            self.file_bytes += len(chunk)

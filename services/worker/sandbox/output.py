"""Bounded capture of a command's output: head and tail in memory, up to TERMINAL_OUTPUT_KEEP_MB of it in a
kept file under .hstack/outputs, a folder capped in files and size (oldest removed first)."""

from __future__ import annotations

import codecs
import os
import stat
import threading
import uuid
from pathlib import Path

from .limits import Limits

OUTPUT_CHARS = 50_000
MB = 1024 * 1024
OUTPUTS_DIR = (".hstack", "outputs")

# Kept outputs still being written (a running command's, a background process's log): rotation skips
# them, since an unlinked file still open for writing would hold disk that no measurement sees.
_writing: set[str] = set()
_writing_lock = threading.Lock()


def open_in_workspace(workspace: Path, name: str, limits: Limits | None = None, reserve: int = 0) -> tuple[int, str]:
    """Create `.hstack/outputs/<name>` for writing without following any symlink the user planted, after
    removing the oldest kept outputs beyond the folder's file and size caps (`reserve`: bytes to make room for)."""
    limits = limits or Limits()
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
        folder = os.path.join(workspace, *OUTPUTS_DIR)
        with _writing_lock:
            busy = {os.path.basename(p) for p in _writing if os.path.dirname(p) == folder}
            _writing.add(os.path.join(folder, name))
        rotate(fd, limits.outputs_max_files - 1, limits.outputs_max_mb * MB - reserve, busy)
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
    except BaseException:
        written(workspace, "/".join((*OUTPUTS_DIR, name)))
        raise
    finally:
        os.close(fd)
    return out, "/".join((*OUTPUTS_DIR, name))


def written(workspace: Path, path: str) -> None:
    """The kept output at `path` (workspace-relative) is no longer written: rotation may remove it."""
    with _writing_lock:
        _writing.discard(os.path.join(workspace, path))


def rotate(dir_fd: int, max_files: int, max_bytes: int, busy: set[str] = frozenset()) -> int:
    """Remove the oldest regular files of the folder until at most `max_files` and `max_bytes` remain;
    the `busy` ones count but stay. How many were removed."""
    found = []
    for entry in os.scandir(dir_fd):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((st.st_mtime_ns, entry.name, st.st_blocks * 512))
    found.sort()
    count, total, removed = len(found), sum(size for *_, size in found), 0
    for _mtime, name, size in found:
        if count <= max(0, max_files) and total <= max(0, max_bytes):
            break
        if name in busy:
            continue
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        count, total, removed = count - 1, total - size, removed + 1
    return removed


class Capture:
    """Feed it bytes; it keeps at most `limit` characters, and past them a file of the output's first and
    last TERMINAL_OUTPUT_KEEP_MB / 2 (the middle of a huge output is dropped, and the file says so)."""

    def __init__(self, workspace: Path, *, limit: int = OUTPUT_CHARS, limits: Limits | None = None) -> None:
        self.workspace, self.limit, self.limits = workspace, limit, limits or Limits()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.head: list[str] = []
        self.head_len = 0
        self.tail = ""
        self.total = 0
        self.file_fd: int | None = None
        self.file_path: str | None = None
        self.file_head = self.limits.output_keep_mb * MB // 2
        self.file_bytes = 0
        self.file_tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        self._text(self.decoder.decode(data), data)

    def close(self) -> tuple[str, bool, str | None]:
        """(output, truncated, workspace-relative path of the kept output or None)."""
        self._text(self.decoder.decode(b"", final=True), b"")
        if self.file_fd is not None:
            self._finish_file()
        head = "".join(self.head)
        if self.file_path is None:
            return head, False, None
        half = self.limit // 2
        omitted = self.total - len(head[:half]) - len(self.tail)
        kept = (f"its first and last {self.limits.output_keep_mb / 2:g} MB are in {self.file_path}" if self.dropped
                else f"the whole output is in {self.file_path}")
        note = f"\n\n[... {omitted} characters omitted; {kept} ...]\n\n"
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
        self.file_fd, self.file_path = open_in_workspace(self.workspace, f"{uuid.uuid4().hex[:12]}.log", self.limits,
                                                         reserve=self.limits.output_keep_mb * MB)
        self._write(held.encode("utf-8", errors="replace"))
        self.head = [held[: self.limit // 2]]
        self.tail = held[-(self.limit // 2):]

    def _write(self, data: bytes) -> None:
        """The first half of the kept bytes go to the file; later ones to a bounded tail written at the end."""
        room = self.file_head - self.file_bytes
        if room > 0:
            _write_all(self.file_fd, data[:room])
            self.file_bytes += min(room, len(data))
            data = data[room:]
        if data:
            self.file_tail += data
            cap = self.limits.output_keep_mb * MB - self.file_head
            if len(self.file_tail) > 2 * cap:  # trimmed now and then, not on every read
                self.dropped += len(self.file_tail) - cap
                del self.file_tail[:-cap]

    def _finish_file(self) -> None:
        cap = self.limits.output_keep_mb * MB - self.file_head
        if len(self.file_tail) > cap:
            self.dropped += len(self.file_tail) - cap
            del self.file_tail[:-cap]
        if self.dropped:
            _write_all(self.file_fd, (f"\n\n[... {self.dropped} bytes omitted: TERMINAL_OUTPUT_KEEP_MB keeps the "
                                      f"first and last {self.limits.output_keep_mb / 2:g} MB of an output ...]\n\n").encode())
        _write_all(self.file_fd, bytes(self.file_tail))
        self.file_tail = bytearray()
        os.close(self.file_fd)
        self.file_fd = None
        written(self.workspace, self.file_path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

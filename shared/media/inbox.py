"""Writing a user's file into their workspace inbox (`inbox/<YYYY-MM-DD>/<name>`), streamed.

The bytes arrive chunk by chunk and go straight to disk: only the first HEAD_BYTES are held, to judge the
type before anything is written, so an upload of any size costs a few chunks of memory. The size cap is
counted as the chunks arrive. Every folder is opened beneath a descriptor of the workspace without
following links, so a link the agent planted in its workspace (`inbox -> /etc`) can never make a file land
outside it; the file itself is created exclusively (never over an existing one).
"""

from __future__ import annotations

import codecs
import hashlib
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from shared.clock import utcnow
from shared.config import Settings
from shared.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType
from shared.media import archives, sniff
from shared.media.names import numbered, safe_name

INBOX = "inbox"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_SAME_NAME = 1000


@dataclass(frozen=True)
class Saved:
    """A file written to the inbox; `path` is relative to the workspace."""

    path: str
    filename: str
    kind: str
    mime: str
    size: int
    sha256: str


def workspace_of(settings: Settings, user_id: str) -> Path:
    """The user's workspace, where the file tools act (the worker's ToolContext names the same folder)."""
    return Path(settings.data_dir) / "users" / user_id / "workspace"


class InboxFile:
    """One file on its way into the inbox: `write` each chunk, then `finish` (or `abort` on any failure)."""

    def __init__(self, settings: Settings, user_id: str, filename: str | None, *, max_bytes: int | None = None,
                 day: date | None = None) -> None:
        self.settings = settings
        self.user_id = user_id
        self.claimed = filename or ""
        self.max_bytes = max_bytes or settings.media_max_bytes
        self.day = day or utcnow().date()
        self.head = bytearray()
        self.type: sniff.FileType | None = None
        self.text = codecs.getincrementaldecoder("utf-8")()
        self.digest = hashlib.sha256()
        self.size = 0
        self.fd: int | None = None
        self.dir_fd: int | None = None
        self.name = ""

    def write(self, chunk: bytes) -> None:
        """Take the next chunk: counted against the cap, judged once the head is known, then written."""
        if not chunk:
            return
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise PayloadTooLarge(f"The file is larger than {self.max_bytes} bytes (MEDIA_MAX_BYTES).")
        self.digest.update(chunk)
        if self.type is None:
            self.head += chunk
            if len(self.head) < sniff.HEAD_BYTES:
                return
            self._start(bytes(self.head))
            chunk, self.head = bytes(self.head), bytearray()
        self._check_text(chunk)
        _write_all(self.fd, chunk)

    def finish(self) -> Saved:
        """Close the file and say what was saved; an empty, non-UTF-8 "text" or bomb-like archive is refused."""
        if self.type is None:
            if not self.head:
                raise InvalidInput("The file is empty.")
            self._start(bytes(self.head))
            self._check_text(bytes(self.head))
            _write_all(self.fd, bytes(self.head))
        if self.type is sniff.TEXT:
            self._check_text(b"", final=True)
        if self.type is sniff.ZIP:
            with open(self.fd, "rb", closefd=False) as fh:  # zipfile seeks to the central directory
                archives.check_zip(fh, self.size)
        os.fsync(self.fd)
        self._close()
        return Saved(f"{INBOX}/{self.day.isoformat()}/{self.name}", self.name, self.type.kind, self.type.mime,
                     self.size, self.digest.hexdigest())

    def abort(self) -> None:
        """Remove what was written so far."""
        if self.fd is not None and self.name:
            try:
                os.unlink(self.name, dir_fd=self.dir_fd)
            except OSError:
                pass
        self._close()

    def _start(self, head: bytes) -> None:
        self.type = sniff.sniff(head, safe_name(self.claimed))
        self.dir_fd = _open_inbox(workspace_of(self.settings, self.user_id), self.day)
        self.name, self.fd = _create(self.dir_fd, safe_name(self.claimed, self.type.extension))

    def _check_text(self, chunk: bytes, final: bool = False) -> None:
        if self.type is not sniff.TEXT:
            return
        try:
            decoded = self.text.decode(chunk, final)
        except UnicodeDecodeError:
            raise UnsupportedMediaType("The file is neither UTF-8 text nor of an accepted binary type.") from None
        if "\x00" in decoded:
            raise UnsupportedMediaType("The file holds NUL bytes: it is not text, nor of an accepted binary type.")

    def _close(self) -> None:
        for attr in ("fd", "dir_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                os.close(fd)
                setattr(self, attr, None)


def save_bytes(settings: Settings, user_id: str, filename: str | None, data: bytes) -> Saved:
    """`data`, already whole in memory, written to the inbox as one chunk; nothing is kept when it is refused."""
    inbox = InboxFile(settings, user_id, filename)
    try:
        inbox.write(data)
        return inbox.finish()
    except BaseException:
        inbox.abort()
        raise


def _open_inbox(workspace: Path, day: date) -> int:
    """A descriptor of `inbox/<day>/` in the workspace, made when missing; a link anywhere on the way is refused."""
    workspace.mkdir(parents=True, exist_ok=True)
    fd = os.open(workspace, DIR_FLAGS)
    try:
        for name in (INBOX, day.isoformat()):
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                raise InvalidInput(f"The workspace's {name} is not a plain folder (a link or a file): files "
                                   "cannot be saved there.") from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _create(dir_fd: int, name: str) -> tuple[str, int]:
    """Create `name` (or `name-2`, `name-3`, … when taken) exclusively beneath `dir_fd`."""
    for n in range(1, MAX_SAME_NAME + 1):
        candidate = name if n == 1 else numbered(name, n)
        try:
            return candidate, os.open(candidate, FILE_FLAGS, 0o644, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise InvalidInput(f"Too many files named {name} today.")


def _write_all(fd: int | None, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

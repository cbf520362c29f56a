"""The workspace files a command runs, read as the gate must: beneath the workspace, never through a symlink.

A script named on the line (`bash s.sh`, `./s.sh`, `python3 s.py`, `make`) is read here so its content can
be judged like a command. What cannot be read (missing, a symlink, not a regular file, too large, a name
only known at run time, a scratch folder) comes back with a `problem`, and the gate asks a human.
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

MOUNT = "/workspace"  # where the sandbox shows the workspace; it is also HOME inside it
MAX_SCRIPT_BYTES = 256 * 1024
# Folders whose files the gate cannot see as the command will: scratch space fresh per command, devices
# (/dev/stdin), and /proc (/proc/self/fd/…, /proc/self/cwd/…).
SCRATCH = ("/tmp", "/var/tmp", "/dev", "/proc", "/run")
DYNAMIC = set("$`*?[{")
MAX_NAMES = 200


@dataclass(frozen=True)
class Seen:
    """One file a command runs: its text and digest, or why the gate could not read it."""

    name: str
    text: str | None = None
    digest: str | None = None
    problem: str | None = None


class Workspace:
    """Reads the files a command runs from one user's workspace (the host folder `root`)."""

    def __init__(self, root: Path | str, mount: str = MOUNT) -> None:
        self.root = str(root)
        self.mount = mount

    def path_of(self, name: str, cwd: str | None) -> str:
        """The absolute path `name` means inside the sandbox, starting from `cwd`."""
        if name == "~" or name.startswith("~/"):
            name = self.mount + name[1:]
        return posixpath.normpath(posixpath.join(cwd or self.mount, name))

    def read(self, name: str, cwd: str | None) -> Seen | None:
        """The file `name` (as the line spells it); None when it is installed software outside the workspace."""
        if DYNAMIC & set(name):
            return Seen(name, problem="its name is only known when the command runs")
        if cwd is None:
            return Seen(name, problem="the folder it is run from is only known when the command runs")
        path = self.path_of(name, cwd)
        for base in (self.mount, self.root.rstrip("/")):
            if path == base or path.startswith(base + "/"):
                return self._read(name, path[len(base) + 1:])
        if any(path == s or path.startswith(s + "/") for s in SCRATCH):
            return Seen(name, problem="it is in a scratch, device or process folder the gate cannot read")
        return None

    def _read(self, name: str, relative: str) -> Seen:
        try:
            data = read_beneath(self.root, relative, MAX_SCRIPT_BYTES)
        except OSError as exc:
            return Seen(name, problem=_why(exc))
        return Seen(name, data.decode("utf-8", "replace"), hashlib.sha256(data).hexdigest())


    def names_in(self, folder: str) -> list[str]:
        """The entries of a workspace folder (sandbox path), [] when it is missing, outside or behind a symlink."""
        path = self.path_of(folder, self.mount)
        if not (path == self.mount or path.startswith(self.mount + "/")):
            return []
        try:
            fd = _open_folder(self.root, [p for p in path[len(self.mount) + 1:].split("/") if p])
        except OSError:
            return []
        try:
            return sorted(os.listdir(fd))[:MAX_NAMES]
        finally:
            os.close(fd)


def _open_folder(root: str, parts: list[str]) -> int:
    """A descriptor of root/parts…, each component opened beneath the last without following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError:
        os.close(fd)
        raise
    return fd


def read_beneath(root: str, relative: str, limit: int) -> bytes:
    """A regular file's bytes, opened component by component beneath `root` without following a symlink."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise IsADirectoryError(errno.EISDIR, "not a file")
    fd = _open_folder(root, parts[:-1])
    try:
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, "too large")
        data = os.read(file_fd, limit + 1)
    finally:
        os.close(file_fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, "too large")
    return data


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "it does not exist yet"
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "its path goes through a symbolic link"
    if exc.errno == errno.EFBIG:
        return f"it is larger than {MAX_SCRIPT_BYTES // 1024} KiB"
    if exc.errno == errno.EISDIR:
        return "it is not a regular file"
    return "it cannot be read"

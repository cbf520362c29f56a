"""Names under a workspace opened through its directory descriptor, never through a symbolic link.

Every name is resolved beneath the workspace's descriptor: with openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it, else one name at a time with
O_NOFOLLOW relative to the folder opened before it. A folder swapped for a link while a tool runs
makes the call fail; it never leads the tool out of the workspace. Failures are OSErrors (ELOOP
for a link), which `explained` turns into messages for the model.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from typing import Iterator

from shared.errors import Forbidden, InvalidInput, NotFound

_SYS_OPENAT2 = 437  # the same number on every architecture (added after the numbers were unified)
_RESOLVE = 0x02 | 0x04 | 0x08  # RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY  # a FIFO opens at once instead of waiting for a writer

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_openat2_works: bool | None = None  # learnt on the first call


def _openat2(dir_fd: int, path: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE)
    fd = _libc.syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(path)),
                       ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return fd


def has_openat2(dir_fd: int) -> bool:
    """Whether this kernel (and its seccomp filter) lets openat2 run; asked once per process."""
    global _openat2_works
    if _openat2_works is None:
        try:
            os.close(_openat2(dir_fd, ".", os.O_RDONLY | os.O_DIRECTORY, 0))
            _openat2_works = True
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM):
                raise
            _openat2_works = False
    return _openat2_works


def _link_error(name: str) -> OSError:
    return OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)


def _open_dir_at(dir_fd: int, name: str) -> int:
    """The folder `name` in `dir_fd`; ELOOP when it is a link (O_DIRECTORY alone would say ENOTDIR).

    A folder there now was a link a moment ago (swapped back since): that too is a link's refusal.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except NotADirectoryError:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
            raise _link_error(name) from None
        raise


class Beneath:
    """One open workspace: every path is a tuple of names under its descriptor (empty: the workspace)."""

    def __init__(self, root_fd: int) -> None:
        self.fd = root_fd
        self.openat2 = has_openat2(root_fd)

    def open(self, parts: tuple[str, ...], flags: int, mode: int = 0o644) -> int:
        """A descriptor of what `parts` names; ELOOP when any name on the way is a symbolic link."""
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=self.fd)
        if self.openat2:
            return _openat2(self.fd, "/".join(parts), flags, mode)
        parent = self.open_dir(parts[:-1]) if len(parts) > 1 else None
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                           dir_fd=self.fd if parent is None else parent)
        finally:
            if parent is not None:
                os.close(parent)

    def open_dir(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the folder `parts` names."""
        if self.openat2 or not parts:
            return self.open(parts, _DIR_FLAGS)
        fd = _open_dir_at(self.fd, parts[0])
        for name in parts[1:]:
            try:
                nxt = _open_dir_at(fd, name)
            finally:
                os.close(fd)
            fd = nxt
        return fd

    def lstat(self, parts: tuple[str, ...]) -> os.stat_result:
        """What `parts` names, without following it; ELOOP when it is a symbolic link."""
        if not parts:
            return os.fstat(self.fd)
        parent = self.open_dir(parts[:-1])
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
        if stat.S_ISLNK(st.st_mode):
            raise _link_error(parts[-1])
        return st

    def entries(self, parts: tuple[str, ...]) -> list[tuple[str, str]]:
        """(name, kind) of each entry of a folder, sorted; kind is dir, file, link or other."""
        fd = self.open_dir(parts)
        try:
            with os.scandir(fd) as found:
                return sorted((e.name, _kind(e)) for e in found)
        finally:
            os.close(fd)

    def make_dirs(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the folder `parts` names, creating each missing folder on the way."""
        fd = os.dup(self.fd)
        for name in parts:
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                nxt = _open_dir_at(fd, name)
            finally:
                os.close(fd)
            fd = nxt
        return fd

    def replace_file(self, parts: tuple[str, ...], data: bytes) -> None:
        """Make `parts` hold exactly `data`: a new file beside it, written and synced, renamed over it.

        Every file tool that writes comes through here. The file keeps its permissions (a new one gets 0644).
        """
        if not parts:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), ".")
        folder = self.make_dirs(parts[:-1])
        try:
            tmp = f".hstack-write-{secrets.token_hex(8)}.tmp"
            _write_new(folder, tmp, data, _mode_to_keep(folder, parts[-1]))
            try:
                os.rename(tmp, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=folder)
                raise
            os.fsync(folder)
        finally:
            os.close(folder)


def _kind(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _mode_to_keep(folder: int, name: str) -> int:
    """The permissions of the file being replaced, 0644 for a new one; a link or folder there is refused."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return 0o644
    if stat.S_ISLNK(st.st_mode):
        raise _link_error(name)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    return stat.S_IMODE(st.st_mode)


def _write_new(folder: int, name: str, data: bytes, mode: int) -> None:
    """Create `name` (it must not exist) in `folder` holding `data`, synced; removed again on failure."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder)
        raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def explained(path: str) -> Iterator[None]:
    """Turn the refusals of a workspace operation on `path` into messages the model can act on."""
    try:
        yield
    except OSError as exc:
        raise _explain(exc, path) from None


def _explain(exc: OSError, path: str) -> Exception:
    code = exc.errno
    if code == errno.ELOOP:
        return InvalidInput(f"{path} is a symbolic link or passes through one; file tools do not follow links.",
                            code="symlink_refused")
    if code == errno.ENOENT:
        return NotFound(f"No such file or directory: {path}")
    if code == errno.ENOTDIR:
        return InvalidInput(f"{path}: a part of it is a file, not a folder.")
    if code == errno.ENXIO:  # a socket, or a device with nothing behind it
        return InvalidInput(f"{path} is not a regular file.")
    if code == errno.EISDIR:
        return InvalidInput(f"{path} is a directory.")
    if code == errno.EXDEV:
        return InvalidInput(f"The path {path!r} points outside the workspace.")
    if code == errno.ENAMETOOLONG:
        return InvalidInput("The path is too long.")
    if code in (errno.EACCES, errno.EPERM):
        return Forbidden(f"{path}: permission denied.")
    return exc

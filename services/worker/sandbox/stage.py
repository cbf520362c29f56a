"""Handing a root worker's workspace to the sandbox uid: its files, and a way in for bwrap.

hand_over gives the sandbox uid what the worker made as root inside the workspace.

bwrap, started as TERMINAL_SANDBOX_UID, finds a `--bind-fd N` source by the path /proc/self/fd/N
names and must be able to search every folder on that path; a DATA_DIR under a 0700 home (Debian's
/root, any `mktemp -d`) is closed to it. So the command's own process, still root, enters a mount
namespace of its own (private: nothing propagates back to the host), binds the workspace onto
STAGE, an empty root-owned folder, reopens descriptor N there, and only then drops to the sandbox
uid and execs bwrap. The namespace belongs to that one command and ends with it; no folder's
permissions change, and the sandbox still sees only the one workspace.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from pathlib import Path
from typing import Callable

STAGE = Path("/run/hstack-sandbox")
HAND_OVER_DEPTH = 256
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000

_libc = ctypes.CDLL(None, use_errno=True)


def hand_over(workspace: Path, uid: int) -> None:
    """Give root-owned entries of the workspace to the sandbox uid, never following a symlink.

    One open folder per level (no recursion), and folders nested deeper than HAND_OVER_DEPTH are left
    alone: only the sandbox itself can make such a tree, so what it holds is the sandbox's already.
    """
    top = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    stack = [(top, iter(()))]
    try:
        if os.fstat(top).st_uid != uid:
            os.fchown(top, uid, uid)
        stack[0] = (top, iter(_own_entries(top, uid)))
        while stack:
            fd, folders = stack[-1]
            name = next(folders, None)
            if name is None:
                os.close(stack.pop()[0])
            elif len(stack) <= HAND_OVER_DEPTH:
                try:
                    child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:  # gone, or swapped for a link, since it was listed
                    continue
                stack.append((child, iter(())))  # held, so the finally closes it whatever happens next
                stack[-1] = (child, iter(_own_entries(child, uid)))
    finally:
        for fd, _ in stack:
            os.close(fd)


def _own_entries(folder: int, uid: int) -> list[str]:
    """Chown the root-owned entries of one folder to `uid`; the names of its sub-folders.

    A file with a second name may be a hard link to a root-owned file elsewhere: it stays root's.
    """
    folders = []
    with os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat(follow_symlinks=False)
                if st.st_uid == 0 and (stat.S_ISDIR(st.st_mode) or st.st_nlink == 1):
                    os.chown(entry.name, uid, uid, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    folders.append(entry.name)
    return folders


def reachable(path: Path, uid: int) -> bool:
    """Whether `uid` (with no supplementary groups) may search every folder above `path`."""
    for parent in Path(path).resolve().parents:
        st = os.stat(parent)
        if not (st.st_mode & 0o001 or (st.st_uid == uid and st.st_mode & 0o100)
                or (st.st_gid == uid and st.st_mode & 0o010)):
            return False
    return True


def stage_ready(uid: int) -> bool:
    """Make STAGE (a root-owned folder, not a link) when it is missing; whether it can be used."""
    try:
        STAGE.mkdir(mode=0o755, exist_ok=True)
        st = os.lstat(STAGE)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and reachable(STAGE / "x", uid) and not st.st_mode & 0o022


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def staged(workspace: Path, fd: int, uid: int, then: Callable[[], None]) -> Callable[[], None]:
    """A preexec_fn: private mount namespace, the workspace bound on STAGE and reopened as `fd`, then `uid`.

    A mount names its source in the caller's own namespace, so the workspace is opened again by
    path there and must be the very folder `fd` holds.
    """
    path, target = str(workspace).encode(), str(STAGE).encode()
    held = os.fstat(fd)

    def enter() -> None:
        then()
        _check(_libc.unshare(_CLONE_NEWNS))
        _check(_libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None))
        again = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        st = os.fstat(again)
        if (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino):
            raise OSError(f"{workspace} changed while its command started")
        _check(_libc.mount(f"/proc/self/fd/{again}".encode(), target, None, ctypes.c_ulong(_MS_BIND), None))
        os.close(again)
        staged_fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(staged_fd, fd)
        os.close(staged_fd)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)

    return enter

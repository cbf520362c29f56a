"""The identity file tools act as: the sandbox's uid when the worker is root, for one thread at a time.

Linux keeps credentials per thread and the raw setfsuid/setfsgid system calls change only the
calling thread's (glibc's setuid family would change every thread). A filesystem uid other than
0 also drops CAP_DAC_OVERRIDE and its kin for that thread, so while a tool runs, the kernel checks
its file access as it would the sandbox's, and what it creates belongs to the sandbox uid.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
from typing import Iterator

from shared.errors import HermesError

# (setfsuid, setfsgid) system call numbers; the 16-bit variants of 32-bit x86 are avoided.
_NUMBERS = {"x86_64": (122, 123), "aarch64": (151, 152), "i686": (215, 216), "armv7l": (215, 216)}
_UNCHANGED = 0xFFFFFFFF  # (uid_t)-1 changes nothing and answers the current value
_PR_SET_PDEATHSIG, _PR_GET_PDEATHSIG = 1, 2

_libc = ctypes.CDLL(None, use_errno=True)


class IdentityError(HermesError):
    """The worker could not take on the sandbox's identity for a file operation."""

    code = "identity_unavailable"


def _call(number: int, value: int) -> int:
    return _libc.syscall(ctypes.c_long(number), ctypes.c_uint(value))


def _numbers() -> tuple[int, int]:
    try:
        return _NUMBERS[platform.machine()]
    except KeyError:
        raise IdentityError(f"no setfsuid system call number known for {platform.machine()}") from None


def current() -> tuple[int, int]:
    """This thread's filesystem uid and gid."""
    uid_call, gid_call = _numbers()
    return _call(uid_call, _UNCHANGED), _call(gid_call, _UNCHANGED)


def _set(uid: int, gid: int) -> None:
    uid_call, gid_call = _numbers()
    _call(gid_call, gid)  # the gid first: once the uid is not 0 the thread may no longer change it
    _call(uid_call, uid)
    if current() != (uid, gid):
        raise IdentityError(f"the filesystem uid/gid of this thread could not be set to {uid}/{gid}")


def death_signal() -> int:
    """The signal this thread gets when its parent dies (0: none)."""
    sig = ctypes.c_int(0)
    _libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(sig))
    return sig.value


@contextlib.contextmanager
def acting_as(uid: int | None) -> Iterator[None]:
    """Run the block with this thread's filesystem uid and gid set to `uid` (None: as we are)."""
    if uid is None:
        yield
        return
    before, signal_before = current(), death_signal()
    try:
        _set(uid, uid)
        yield
    finally:
        _set(*before)  # also after a half-done _set: the gid may have changed without the uid
        if signal_before:  # the kernel clears it on any change of the filesystem uid or gid
            _libc.prctl(_PR_SET_PDEATHSIG, signal_before)


def sandbox_uid(settings) -> int | None:
    """The uid file tools act as, when it must differ from ours (only when we are root)."""
    return settings.terminal_sandbox_uid if os.geteuid() == 0 else None

"""A seccomp filter refusing fallocate(2) to every process of a command.

fallocate reserves any number of disk blocks at once, without writing them: a loop of it fills a disk
far faster than the workspace quota's watcher can look (30 GB in the first second here). Refused with
EOPNOTSUPP, as filesystems without it answer, programs fall back to writing (glibc's posix_fallocate
does), which the quota's watcher keeps pace with. The filter is loaded in the child before it execs the
sandbox and every descendant inherits it; no_new_privs comes with it (bwrap here is not setuid).
"""

from __future__ import annotations

import ctypes
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
EOPNOTSUPP = 95
LD_ABS_W, JEQ_K, RET_K = 0x20, 0x15, 0x06
X32_BIT = 0x40000000
# (audit arch, fallocate's numbers on it): x86-64 (and its x32 ABI), i386, aarch64.
ARCHES = ((0xC000003E, (285, 285 | X32_BIT)), (0x40000003, (324,)), (0xC00000B7, (47,)))


def _program() -> bytes:
    """Classic BPF: for each known arch, fallocate's numbers answer EOPNOTSUPP; anything else is allowed."""
    ops: list[tuple[int, int, int, int]] = [(LD_ABS_W, 0, 0, 4)]  # seccomp_data.arch
    for arch, numbers in ARCHES:
        body = [(LD_ABS_W, 0, 0, 0)]  # seccomp_data.nr
        for n, number in enumerate(numbers):
            body.append((JEQ_K, len(numbers) - n, 0, number))  # to the refusal after the last test
        body += [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | EOPNOTSUPP)]
        ops.append((JEQ_K, 0, len(body), arch))
        ops += body
    ops.append((RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *op) for op in ops)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def no_fallocate():
    """A function to call in the child before exec: installs the filter, raising OSError if it cannot."""
    code = _program()
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)

    def install(_program_kept=buffer) -> None:  # the default keeps the program's memory alive
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "could not load the sandbox's seccomp filter")

    return install

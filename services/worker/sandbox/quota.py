"""A per-user workspace quota (TERMINAL_WORKSPACE_QUOTA_MB), kept by the file tools and the terminal.

Usage is the disk the workspace really holds: allocated blocks (a sparse file counts what it wrote, not its
size), each inode once (hard links), and at least one block per entry (a million empty files are not free).
A measurement walks the tree without following symlinks and stops as soon as it passes the quota, so it
reads at most quota / ENTRY_BYTES entries (about 1 s per 100,000); it is reused for a few seconds, or
WATCH_COST_SHARE times what it cost when that is longer, and moved by what the file tools write meanwhile.

What it guarantees: a file-tool write that would pass the quota is refused; a command starts with every
file it writes capped at the room left (RLIMIT_FSIZE), cannot reserve blocks without writing them
(seccomp.py), is measured while it runs and killed once the workspace is over, and while over, commands
run with no room to write and the file tools refuse. What it does not: a command may pass the quota by
what it writes between two measurements (a fast writer of files under the room left: about 100 MB past a
100 MB quota here), until it is killed.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

from shared.errors import PayloadTooLarge

ENTRY_BYTES = 4096
FRESH_SECONDS = 5.0
WATCH_SECONDS = 0.25  # a running command's workspace is measured this often, or less when measuring is slow
WATCH_COST_SHARE = 5  # a measurement is reused for at least this many times what it cost
MEASURED_UP_TO = 2  # usage is exact up to twice the quota, so a command deleting files is seen to
CLEANUP_SLACK = 256 * ENTRY_BYTES  # what a command started over the quota may add (a few small files)
MB = 1024 * 1024


class QuotaExceeded(PayloadTooLarge):
    """The workspace would pass its quota."""

    code = "workspace_quota_exceeded"


def measure(workspace: Path, stop_above: int | None = None) -> int:
    """Bytes the workspace holds on disk; once past `stop_above` the walk stops and returns what it has.
    Folders are opened by descriptor without following symlinks, so a swapped-in link leads nowhere."""
    total, seen = ENTRY_BYTES, set()
    walk = os.fwalk(workspace, follow_symlinks=False)
    try:
        for _root, dirs, files, dir_fd in walk:
            for name in dirs + files:
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile: what is gone holds nothing
                if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                total += max(st.st_blocks * 512, ENTRY_BYTES)
                if stop_above is not None and total > stop_above:
                    return total
    finally:
        walk.close()
    return total


class Meter:
    """Cached usage per workspace, shared by the tools and commands of this worker process. A measurement
    is reused for at least WATCH_COST_SHARE times what it cost, so measuring takes at most that share of
    the time however big the workspace grows."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self._usage: dict[str, tuple[int, float, float]] = {}  # used, measured at, cost of measuring
        self._lock = threading.Lock()

    def usage(self, workspace: Path, quota_bytes: int, *, max_age: float = FRESH_SECONDS) -> int:
        """Bytes used, measured again when the last look is older than `max_age` (and than its cost allows)."""
        key = os.fspath(workspace)
        with self._lock:
            cached = self._usage.get(key)
        if cached is not None and self.clock() - cached[1] < max(max_age, WATCH_COST_SHARE * cached[2]):
            return cached[0]
        started = self.clock()
        used = measure(workspace, stop_above=MEASURED_UP_TO * quota_bytes)
        with self._lock:
            self._usage[key] = (used, self.clock(), self.clock() - started)
        return used

    def added(self, workspace: Path, nbytes: int) -> None:
        """A write of ours grew the workspace by about `nbytes`: count it until the next measurement."""
        key = os.fspath(workspace)
        with self._lock:
            if key in self._usage:
                used, at, cost = self._usage[key]
                self._usage[key] = (used + nbytes, at, cost)


meter = Meter()


def ensure_room(workspace: Path, adding_bytes: int, quota_mb: int) -> None:
    """Refuse (QuotaExceeded) a write of `adding_bytes` that would take the workspace past its quota."""
    quota = quota_mb * MB
    used = meter.usage(workspace, quota)
    if used + adding_bytes > quota:
        used = meter.usage(workspace, quota, max_age=0)  # files may have been removed since the last look
    if used + adding_bytes > quota:
        raise QuotaExceeded(
            f"this write ({_mb(adding_bytes)}) would take the workspace past its quota: {_mb(used)} of "
            f"{quota_mb} MB used (TERMINAL_WORKSPACE_QUOTA_MB); delete files you no longer need first")
    meter.added(workspace, adding_bytes)


def room_left(workspace: Path, quota_mb: int) -> int:
    """Bytes the workspace may still grow by (0 when over), measured as freshly as its cost allows."""
    quota = quota_mb * MB
    return max(0, quota - meter.usage(workspace, quota, max_age=0))


def over_quota(workspace: Path, quota_mb: int) -> str | None:
    """A note for the model when the workspace is past its quota, else None."""
    quota = quota_mb * MB
    used = meter.usage(workspace, quota, max_age=0)
    if used <= quota:
        return None
    return (f"the workspace is over its quota ({quota_mb} MB, TERMINAL_WORKSPACE_QUOTA_MB): writes fail until "
            "files are deleted")


class Watch:
    """A running command's workspace, measured every WATCH_SECONDS (less often when measuring is slow).
    A command started over the quota (to delete files: it cannot write data, RLIMIT_FSIZE is 0) is
    stopped only if the workspace grows past what it held; past MEASURED_UP_TO times the quota that
    growth is not measured, and only RLIMIT_FSIZE holds."""

    def __init__(self, workspace: Path, quota_mb: int) -> None:
        self.workspace, self.quota = workspace, quota_mb * MB
        start = meter.usage(workspace, self.quota, max_age=WATCH_SECONDS)
        self.limit = self.quota if start <= self.quota else start + CLEANUP_SLACK
        if start > MEASURED_UP_TO * self.quota:
            self.limit = None

    def over(self) -> bool:
        """Whether the workspace has passed its quota (or grown past what it held, when it started over)."""
        if self.limit is None:
            return False
        return meter.usage(self.workspace, self.quota, max_age=WATCH_SECONDS) > self.limit


def _mb(nbytes: int) -> str:
    return f"{nbytes / MB:.1f} MB"

"""One SQLite writer at a time across every process on the same database file, taken in turns.

SQLite lets a second process's `BEGIN IMMEDIATE` wait through its busy handler, which sleeps and
retries (1, 2, 5, 10 … 100 ms). Under a burst — the api accepting turns while the worker claims and
finishes them — the waiter kept losing the race to the other process's next transaction and slept
for seconds in all (measured: 21 s of the worker's writes spent inside BEGIN IMMEDIATE while 200 turns
arrived, one wait of 2.7 s), and since a waiting writer holds its process's write lock, every other
writer thread of that process stalled behind it.

So writers take kernel locks (`flock`) on two files beside the database, a turnstile: the gate,
then the lock, then they let go of the gate. A process waiting for the lock holds the gate, so the
holder's next writer queues behind it instead of snatching the lock back: busy processes alternate,
and the kernel wakes the waiter the moment the holder unlocks (a plain flock alone starved the api,
whose woken waiter lost every race to the worker's next thread). The busy timeout still covers a
process that takes no lock (the sqlite3 shell, an old version).

Threads of one process are serialised by an RLock first (one open file holds one flock, so two threads
of a process must never both think they hold it); a re-entered `hold` is a no-op.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from contextlib import contextmanager
from typing import Iterator

log = logging.getLogger(__name__)


class WriterLock:
    """An RLock within the process plus a flock turnstile between processes (only the RLock when path is None)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._rlock = threading.RLock()
        self._depth = 0  # changed only by the thread holding the RLock
        self._fds: tuple[int, int] | None = None
        self._fds_pid = 0

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._rlock:
            fds = self._take() if self._depth == 0 else None
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if fds is not None:
                    fcntl.flock(fds[1], fcntl.LOCK_UN)

    def _take(self) -> tuple[int, int] | None:
        """Through the gate to the lock; None (and the lock off from then on) where the filesystem refuses flock."""
        fds = self._files()
        if fds is None:
            return None
        gate, lock = fds
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
        except OSError as exc:
            self._give_up(exc)
            return None
        return fds

    def _give_up(self, exc: OSError) -> None:
        log.warning("no cross-process writer lock beside %s (%s); SQLite's busy timeout waits instead", self.path, exc)
        self.path = None

    def _files(self) -> tuple[int, int] | None:
        """This process's descriptors of the gate and lock files; a forked child opens its own (an inherited
        descriptor shares the parent's lock). None when there is nothing to lock or the files cannot be opened:
        SQLite's busy timeout then does the waiting."""
        if self.path is None:
            return None
        if self._fds is None or self._fds_pid != os.getpid():
            try:
                self._fds = (_open(self.path + ".writer-gate"), _open(self.path + ".writer-lock"))
            except OSError as exc:
                self._give_up(exc)
                return None
            self._fds_pid = os.getpid()
        return self._fds


def _open(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)  # flock needs no write access


_locks: dict[str, WriterLock] = {}
_locks_guard = threading.Lock()


def writer_lock_for(sqlite_path: str) -> WriterLock:
    """The process's one lock for this database file (two Database objects on one file share it)."""
    if not sqlite_path or sqlite_path == ":memory:" or sqlite_path.startswith("file:"):
        return WriterLock(None)  # an in-memory database lives in one process
    path = os.path.abspath(sqlite_path)
    with _locks_guard:
        return _locks.setdefault(path, WriterLock(path))

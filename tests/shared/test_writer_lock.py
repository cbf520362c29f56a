"""The SQLite writer lock: processes take turns, and writers in several processes never see a locked database."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading

import pytest
from sqlalchemy import text

from shared.db import Database
from shared.concurrency.writer_lock import WriterLock, writer_lock_for
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def gate_taken(path: str) -> bool:
    """Whether someone holds the turnstile's gate (a process waiting for the lock)."""
    fd = os.open(path + ".writer-gate", os.O_RDONLY | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_waiting_process_goes_before_the_holders_next_writer(tmp_path):
    """Two WriterLocks on one path open their own files, as two processes do."""
    path = str(tmp_path / "x.db")
    mine, other = WriterLock(path), WriterLock(path)
    order: list[str] = []

    def write(lock: WriterLock, name: str) -> None:
        with lock.hold():
            order.append(name)

    with mine.hold():
        waiting = threading.Thread(target=write, args=(other, "other process"))
        waiting.start()
        wait_until(lambda: gate_taken(path), what="the other process to queue for the lock")
        my_next = threading.Thread(target=write, args=(mine, "my next writer"))
        my_next.start()  # it queues behind this thread, then behind the other process at the gate
    waiting.join(10)
    my_next.join(10)
    assert order == ["other process", "my next writer"]


def test_a_thread_may_take_the_lock_again_inside_its_own_write(tmp_path):
    lock = writer_lock_for(str(tmp_path / "x.db"))
    with lock.hold():
        with lock.hold():
            pass
        assert gate_taken(str(tmp_path / "x.db")) is False
    assert lock is writer_lock_for(str(tmp_path / "x.db"))  # one lock per file per process


def test_an_in_memory_database_needs_no_lock_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with writer_lock_for(":memory:").hold():
        pass
    assert list(tmp_path.iterdir()) == []


def _count_writes(url: str, n: int) -> None:
    db = Database(url)
    for _ in range(n):
        with db.write() as s:
            value = s.execute(text("SELECT n FROM counter")).scalar()
            s.execute(text("UPDATE counter SET n = :n"), {"n": value + 1})
    db.dispose()


@pytest.mark.sqlite_only
def test_writers_in_four_processes_never_lose_an_update_or_see_a_locked_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    db = Database(url)
    with db.write() as s:
        s.execute(text("CREATE TABLE counter (n INTEGER NOT NULL)"))
        s.execute(text("INSERT INTO counter VALUES (0)"))
    spawn = multiprocessing.get_context("spawn")
    procs = [spawn.Process(target=_count_writes, args=(url, 50)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with db.read() as s:
        assert s.execute(text("SELECT n FROM counter")).scalar() == 200


def test_without_a_place_for_its_files_the_lock_still_serialises_threads(tmp_path, caplog):
    """A lock file that cannot be made leaves the waiting to SQLite's busy timeout, with a warning, never an error."""
    lock = WriterLock(str(tmp_path / "missing-dir" / "x.db"))
    with lock.hold():
        pass
    assert lock.path is None
    assert "busy timeout waits instead" in caplog.text

"""DaemonThreads: a job starts at once, a finished job's thread takes the next one, idle threads leave."""

from __future__ import annotations

import logging
import threading

from shared.concurrency.daemon_threads import DaemonThreads
from tests.support.waiting import wait_until


def _alive(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"{name}-")]


def test_jobs_one_after_another_run_on_the_same_thread():
    pool = DaemonThreads("reuse-test")
    ran_on = []
    for _ in range(5):
        assert pool.run(lambda: ran_on.append(threading.get_ident())).wait(5)
    assert len(set(ran_on)) == 1 and len(_alive("reuse-test")) == 1
    assert all(t.daemon for t in _alive("reuse-test"))


def test_a_job_never_waits_behind_a_busy_one():
    pool = DaemonThreads("busy-test")
    release = threading.Event()
    slow = pool.run(lambda: release.wait(10))
    quick = pool.run(lambda: None)
    try:
        assert quick.wait(5) and not slow.is_set()  # a second thread took it while the first is held
    finally:
        release.set()
    assert slow.wait(5)


def test_a_failing_job_is_logged_and_its_thread_goes_on(caplog):
    pool = DaemonThreads("fail-test")
    with caplog.at_level(logging.ERROR):
        assert pool.run(lambda: 1 / 0).wait(5)
    assert "background job of fail-test failed" in caplog.text
    ran = []
    assert pool.run(lambda: ran.append(threading.current_thread().name)).wait(5)
    assert ran == ["fail-test-1"]


def test_a_thread_idle_for_its_time_leaves_and_a_later_job_starts_another():
    pool = DaemonThreads("idle-test", idle_seconds=0.05)
    assert pool.run(lambda: None).wait(5)
    wait_until(lambda: not _alive("idle-test"), timeout=5, what="the idle thread to leave")
    ran = []
    assert pool.run(lambda: ran.append(threading.current_thread().name)).wait(5)
    assert ran == ["idle-test-2"]


def test_many_jobs_at_once_all_run_while_threads_come_and_go():
    pool = DaemonThreads("churn-test", idle_seconds=0.001)
    counted, lock = [], threading.Lock()

    def job():
        with lock:
            counted.append(1)

    events = [pool.run(job) for _ in range(300)]
    assert all(e.wait(10) for e in events) and len(counted) == 300

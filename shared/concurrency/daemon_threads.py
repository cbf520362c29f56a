"""Daemon threads kept for reuse: a job starts at once on an idle thread, or on a new one when none is idle."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

log = logging.getLogger(__name__)

IDLE_SECONDS = 60.0  # a thread with no job for this long exits (a burst's threads do not stay forever)


class DaemonThreads:
    """As many threads as jobs running at once, each reused once its job is done.

    Starting a thread per job (what the recall prefetch did) cost its caller more than the thread's
    creation: `Thread.start()` waits until the new thread runs, so the turn that started its recall
    search handed the GIL to it and waited for it back. `run` only queues the job for a thread already
    waiting, and starts one only when none is. The threads are daemons: a job that never returns cannot
    keep the process from exiting.

    Counting: `_idle` is the number of threads waiting for a job that no `run` has claimed yet. `run`
    claims one (or starts a thread), then queues the job; a thread that waited IDLE_SECONDS leaves only
    by giving up an unclaimed place, so every queued job has a thread to take it.
    """

    def __init__(self, name: str, idle_seconds: float = IDLE_SECONDS) -> None:
        self._name = name
        self._idle_seconds = idle_seconds
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0

    def run(self, job: Callable[[], None]) -> threading.Event:
        """Start `job` now; the event is set once it returned or raised (an exception is logged)."""
        done = threading.Event()
        with self._lock:
            start = self._idle == 0
            if start:
                self._started += 1
                number = self._started
            else:
                self._idle -= 1
        self._jobs.put((job, done))
        if start:
            threading.Thread(target=self._serve, name=f"{self._name}-{number}", daemon=True).start()
        return done

    def _serve(self) -> None:
        while True:
            try:
                job, done = self._jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:
                        self._idle -= 1
                        return
                continue  # every waiting place was claimed: a job is on its way
            try:
                job()
            except Exception:
                log.exception("background job of %s failed", self._name)
            finally:
                with self._lock:
                    self._idle += 1  # before the caller hears of it: its next job finds this thread waiting
                done.set()

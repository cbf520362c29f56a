"""Background work that must run in order per session, while different sessions run in parallel."""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from typing import Callable

log = logging.getLogger(__name__)


class SessionQueue:
    """Jobs run one at a time per key, in submission order; keys share a few daemon threads.

    A key present in `_pending` is owned by exactly one thread until its deque is empty; `submit`
    only appends to that deque, so one session's jobs never overtake each other, and a slow session
    holds up the others only when every thread is busy. The threads are daemons: a provider call
    that never returns cannot keep the worker process from exiting.
    """

    def __init__(self, workers: int = 4, name: str = "provider-sync") -> None:
        self._workers = workers
        self._name = name
        self._threads: list[threading.Thread] = []
        self._keys: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._pending: dict[str, deque[Callable[[], None]]] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    def submit(self, key: str, job: Callable[[], None]) -> bool:
        """Queue `job` behind the key's earlier jobs; False once the queue is closed."""
        with self._lock:
            if self._closed:
                return False
            jobs = self._pending.get(key)
            if jobs is not None:
                jobs.append(job)
                return True
            self._pending[key] = deque([job])
            if not self._threads:
                self._start()
        self._keys.put(key)
        return True

    def _start(self) -> None:
        for n in range(self._workers):
            thread = threading.Thread(target=self._serve, name=f"{self._name}-{n}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self) -> None:
        while True:
            self._drain(self._keys.get())

    def _drain(self, key: str) -> None:
        while True:
            with self._lock:
                jobs = self._pending[key]
                if not jobs:
                    del self._pending[key]
                    self._idle.notify_all()
                    return
                job = jobs.popleft()
            try:
                job()
            except Exception:
                log.exception("background provider job failed")

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every queued job ran; False if some were still waiting after `timeout` seconds."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def close(self, timeout: float) -> int:
        """Stop taking jobs, let queued ones finish for up to `timeout` s; returns how many never ran."""
        with self._lock:
            self._closed = True
        self.wait_idle(timeout)
        with self._lock:
            return sum(len(jobs) for jobs in self._pending.values())

"""The per-process lease keeper: renews the lease of every turn this worker runs.

One daemon thread per process heartbeats all held turns in one statement every
TURN_HEARTBEAT_SECONDS (so 200 concurrent turns cost one write, not 200), collects the cancel
requests clients made, runs the dead-worker sweep when one is set (services/worker/recovery.py) and
announces the service in Redis every ~10 s. A failed heartbeat is logged and retried on the next tick;
it never stops the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import redis

from shared.messaging import cancels
from shared.ops import heartbeats
from shared.config import Settings
from shared.db import Database
from shared.stores import turns

log = logging.getLogger(__name__)

ANNOUNCE_EVERY_SECONDS = 10.0


class LeaseKeeper:
    """Holds turn leases for one worker id and remembers which held turns were cancelled."""

    def __init__(self, db: Database, r: redis.Redis, worker_id: str, *, interval: float, service: str,
                 settings: Settings | None = None, sweep: Callable[[], object] | None = None) -> None:
        self.db = db
        self.sweep = sweep  # called on every tick; it decides itself how often it does anything
        self.settings = settings  # when given, cancels pushed through Redis are heard at once
        self.redis = r
        self.worker_id = worker_id
        self.interval = interval
        self.service = service
        self._held: set[str] = set()
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: threading.Thread | None = None
        self._announced_at = 0.0

    def start(self) -> None:
        """Start the thread if it is not running (safe to call on every task)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,), name="lease-keeper", daemon=True)
            self._thread.start()
            if self.settings is not None:
                self._listener = threading.Thread(
                    target=cancels.follow, args=(self.redis, self.settings, self._cancel_pushed, self._stop),
                    name="cancel-listener", daemon=True)
                self._listener.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and wait for it."""
        with self._lock:
            thread, self._thread, self._listener = self._thread, None, None
            self._stop.set()
        if thread is not None:  # the cancel listener sees the stop within cancels.LISTEN_SECONDS by itself
            thread.join(timeout)

    def _cancel_pushed(self, turn_id: str) -> None:
        with self._lock:
            if turn_id in self._held:
                self._cancelled.add(turn_id)

    def hold(self, turn_id: str, *, cancel_requested: bool = False) -> None:
        with self._lock:
            self._held.add(turn_id)
            if cancel_requested:
                self._cancelled.add(turn_id)

    def release(self, turn_id: str) -> None:
        with self._lock:
            self._held.discard(turn_id)
            self._cancelled.discard(turn_id)

    def is_cancelled(self, turn_id: str) -> bool:
        with self._lock:
            return turn_id in self._cancelled

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._held)

    def beat(self) -> None:
        """One round: renew held leases, record cancel requests, announce when due."""
        held = self.held()
        try:
            cancelled = turns.heartbeat(self.db, held, self.worker_id)
        except Exception:
            log.warning("turn heartbeat failed; retrying next tick", exc_info=True)
        else:
            with self._lock:
                self._cancelled.update(cancelled & self._held)
        if self.sweep is not None:
            self.sweep()
        if time.monotonic() - self._announced_at >= ANNOUNCE_EVERY_SECONDS:
            try:
                heartbeats.announce(self.redis, self.service, turns=len(held))
                self._announced_at = time.monotonic()
            except Exception:
                log.warning("service announce failed; retrying next tick", exc_info=True)

    def _run(self, stop: threading.Event) -> None:
        while True:
            self.beat()
            if stop.wait(self.interval):
                return

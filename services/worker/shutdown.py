"""A worker's graceful stop (SIGTERM): claim nothing new, hand running turns back, be gone within the grace.

Once `begin` is called, drain loops stop claiming and a running turn is handed back at its next
safe point (before a model call: everything it stored stays, another worker resumes it at once).
A model call still under way at ABANDON_AT of the grace is abandoned (its answer was never stored,
so the turn that resumes asks again), and at FORCE_AT a watchdog hands back whatever is still held
and ends the process, so a stuck call can never turn a graceful stop into a kill.
"""

from __future__ import annotations

import threading
import time

ABANDON_AT = 0.6
FORCE_AT = 0.9


class Released(Exception):
    """A stopping worker handed its turn back; another worker resumes it."""


class Shutdown:
    """The process's stop flag and its deadlines."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._started = 0.0
        self.grace = 0.0

    def begin(self, grace: float) -> bool:
        """Start stopping (the first call wins); False when already stopping."""
        if self._event.is_set():
            return False
        self._started, self.grace = time.monotonic(), grace
        self._event.set()
        return True

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def overdue(self) -> bool:
        """True once work in flight must be abandoned for the process to leave in time."""
        return self.requested and time.monotonic() - self._started >= self.grace * ABANDON_AT

    def seconds_to_force(self) -> float:
        return max(0.0, self._started + self.grace * FORCE_AT - time.monotonic())

"""Taking over at once the turns of a worker that died on this host, instead of waiting out their leases.

A worker killed by SIGKILL (or the OOM killer) holds its running turns' leases until TURN_LEASE_SECONDS pass,
though `hstack run` restarts it in about a second. Every few seconds each worker process lists the holders of
running turns on its own host, asks the kernel whether each still lives (shared/ops/holders.py: pid, pid
namespace and start time, so a reused pid is not mistaken for the holder), frees the leases of the dead ones and
sends their turns, which the next worker claims and resumes from their stored progress. No turn runs twice at
once: only a process known to be gone loses its leases; a holder on another host (or another pid namespace,
another container) is never judged from here and its lease still has to lapse, as before.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from shared.db import Database
from shared.models.turns import Turn
from shared.ops import holders
from shared.stores import turns

log = logging.getLogger(__name__)

SWEEP_EVERY_SECONDS = 2.0


class DeadHolderSweep:
    """Called on every lease-keeper tick; sweeps at most every `every` seconds."""

    def __init__(self, db: Database, worker_id: str, send: Callable[[list[Turn]], None], *, lease_seconds: float,
                 every: float = SWEEP_EVERY_SECONDS) -> None:
        self.db = db
        self.worker_id = worker_id
        self.send = send
        self.lease_seconds = lease_seconds
        self.every = every
        self._last = float("-inf")

    def __call__(self) -> list[Turn]:
        now = time.monotonic()
        if now - self._last < self.every:
            return []
        self._last = now
        try:
            return self.sweep()
        except Exception:
            log.warning("the dead-worker sweep failed; trying again in %.0f s", self.every, exc_info=True)
            return []

    def sweep(self) -> list[Turn]:
        """Free and send the running turns whose holder on this host is dead; returns them."""
        candidates = turns.running_holders(self.db, holders.local_prefix())
        dead = sorted(h for h in candidates if h != self.worker_id and holders.dead_here(h))
        if not dead:
            return []
        freed = turns.free_leases(self.db, dead, self.lease_seconds)
        for turn in freed:
            log.warning("turn %s was held by %s, which is gone: sent again now", turn.id, turn.worker_id)
        self.send(freed)
        return freed

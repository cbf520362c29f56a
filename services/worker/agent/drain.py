"""Draining a session: run its turns one at a time, in `seq` order, until none is runnable here.

Any number of tasks may drain the same session at once (a redelivery, the sweeper, the next
turn's own task): `claim_next` lets only one worker hold the session's running turn, so the
others find nothing to claim and return. Different sessions drain in parallel on the pool.
"""

from __future__ import annotations

from shared.stores import turns
from services.worker.agent.loop import run_turn
from services.worker.runtime import Runtime


def drain_session(runtime: Runtime, session_id: str) -> int:
    """Claim and run the session's turns until it is idle or busy elsewhere; returns how many ran."""
    runtime.leases.start()
    ran = 0
    while True:
        turn = turns.claim_next(runtime.db, session_id, runtime.worker_id, runtime.settings.turn_lease_seconds)
        if turn is None:
            return ran
        run_turn(runtime, turn)
        ran += 1

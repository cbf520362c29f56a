"""Draining a session: run its turns one at a time, in `seq` order, until none is runnable here.

Any number of tasks may drain the same session at once (a redelivery, the sweeper, the next
turn's own task): `claim_next` lets only one worker hold the session's running turn, so the
others find nothing to claim and return. Different sessions drain in parallel on the pool.

A user holds at most MAX_RUNNING_TURNS_PER_USER slots: when a session goes idle here, its slot
passes to the user's oldest waiting turns. A stopping worker claims nothing more and re-sends
the session's next turn for another worker.
"""

from __future__ import annotations

from shared.stores import turn_slots, turns
from services.worker.agent.loop import run_turn
from services.worker.runtime import Runtime


def drain_session(runtime: Runtime, session_id: str) -> int:
    """Claim and run the session's turns until it is idle or busy elsewhere; returns how many ran."""
    runtime.leases.start()
    settings = runtime.settings
    ran = 0
    while not runtime.shutdown.requested:
        # The first claim follows the task that named this session: a turn is almost surely waiting.
        turn = turns.claim_next(runtime.db, session_id, runtime.worker_id, settings.turn_lease_seconds,
                                settings.max_running_turns_per_user, expect_work=ran == 0)
        if turn is None:
            break
        run_turn(runtime, turn)
        ran += 1
    if runtime.shutdown.requested:
        runtime.send_all([t for t in [turns.hand_off(runtime.db, session_id)] if t is not None])
    runtime.send_all(turn_slots.send_waiting(runtime.db, session_id, settings.max_running_turns_per_user))
    return ran


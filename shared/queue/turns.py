"""Putting a turn on the queue: only its id, after its row is committed.

A broker failure is logged and not raised: the row already says the turn was sent, and the sweep re-sends
turns that stay queued too long, so a lost send never loses a turn.
"""

from __future__ import annotations

import logging
from typing import Callable

from pydantic import BaseModel

from shared.queue.names import RUN_TURN
from shared.queue.payloads import RunTurn

log = logging.getLogger(__name__)

Send = Callable[[str, BaseModel], None]


def send_turn(send: Send, turn_id: str, session_id: str) -> bool:
    """Enqueue a run of the turn; False when the broker failed."""
    try:
        send(RUN_TURN, RunTurn(turn_id=turn_id, session_id=session_id))
    except Exception as exc:  # any broker failure: the row says sent, the sweep re-sends it
        log.warning("could not enqueue %s of turn %s (%s); the sweeper will re-send it", RUN_TURN, turn_id,
                    type(exc).__name__)
        return False
    return True

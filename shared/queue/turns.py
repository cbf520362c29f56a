"""The one place a turn goes onto the queue: only its id, after its row is committed.

Every sender (the api accepting or resuming a turn, the worker handing a session's next turn on, the
curator's sweeps) calls `send_turn`. A broker failure is logged and not raised: the row already says the
turn was sent, and the sweep re-sends turns that stay queued too long, so a lost send never loses a turn.
"""

from __future__ import annotations

import logging
from typing import Callable

from pydantic import BaseModel

from shared.queue.names import RESUME_TURN, RUN_TURN
from shared.queue.payloads import ResumeTurn, RunTurn

log = logging.getLogger(__name__)

Send = Callable[[str, BaseModel], None]


def send_turn(send: Send, turn_id: str, session_id: str, *, approval_id: str | None = None) -> bool:
    """Enqueue a run of the turn (with `approval_id`: its resume after that decision); False when the broker failed."""
    if approval_id is None:
        name, payload = RUN_TURN, RunTurn(turn_id=turn_id, session_id=session_id)
    else:
        name, payload = RESUME_TURN, ResumeTurn(turn_id=turn_id, session_id=session_id, approval_id=approval_id)
    try:
        send(name, payload)
    except Exception as exc:  # any broker failure: the row says sent, the sweep re-sends it
        log.warning("could not enqueue %s of turn %s (%s); the sweeper will re-send it", name, turn_id,
                    type(exc).__name__)
        return False
    return True

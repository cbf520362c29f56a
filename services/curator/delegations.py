"""The delegation sweep (part of the turn sweep): children nobody settled, past their deadline, or orphaned.

A child's worker settles it when its turn ends; this is the backstop for every other way a child ends: cancelled
while queued, its worker dead between finishing and settling, past DELEGATE_CHILD_TIMEOUT_SECONDS, or left
running by a parent that ended. Each settled child is announced on its parent's stream, and a parent whose last
child settled is sent on through `send_turn`.
"""

from __future__ import annotations

import logging
from typing import Callable

import redis
from pydantic import BaseModel

from shared import clock
from shared.config import Settings
from shared.db import Database
from shared.messaging import cancels, delegate_events
from shared.queue.turns import send_turn
from shared.stores import delegations

log = logging.getLogger(__name__)


def sweep(settings: Settings, db: Database, r: redis.Redis, send: Callable[[str, BaseModel], None]) -> int:
    """Settle and stop what the sweep finds; returns how many children it settled or stopped."""
    swept = delegations.sweep(db, clock.utcnow())
    for turn_id in swept.stop:
        cancels.announce(r, settings, turn_id)
    for settled in swept.settled:
        delegate_events.publish(r, settled.row)
        if settled.resume is not None:
            send_turn(send, settled.resume.id, settled.resume.session_id)
    count = len(swept.settled) + len(swept.stop)
    if count:
        log.info("delegation sweep: %d subtask(s) settled, %d told to stop", len(swept.settled), len(swept.stop))
    return count

"""Turns this api process accepted a moment ago, so opening their event stream needs no read of the row.

A client posts a turn and then opens its events, usually on the same process: the row was written here
an instant before and its owner never changes, so the stream checks ownership against what the accept
wrote instead of reading it again (a threadpool hop and a query on every stream). Kept briefly and in
bounded number; a turn not found here is read from the database as before. What the stream needs the
row for beyond ownership (has the turn already ended?) the accepted row answers "not yet", and a turn
that ends without publishing its end (its worker died) is still caught when the stream stays idle.
Used from the event loop only (no lock).
"""

from __future__ import annotations

import time
from collections import OrderedDict

from shared.models.turns import Turn

KEPT = 4096
KEPT_SECONDS = 60.0


class RecentTurns:
    """turn id -> (the row as accepted, when), oldest first."""

    def __init__(self, kept: int = KEPT, seconds: float = KEPT_SECONDS) -> None:
        self._kept = kept
        self._seconds = seconds
        self._turns: OrderedDict[str, tuple[Turn, float]] = OrderedDict()

    def add(self, turn: Turn) -> None:
        self._turns[turn.id] = (turn, time.monotonic())
        self._turns.move_to_end(turn.id)
        while len(self._turns) > self._kept:
            self._turns.popitem(last=False)

    def get(self, turn_id: str, user_id: str) -> Turn | None:
        """The turn as accepted, when it is this user's and recent; None sends the caller to the database."""
        found = self._turns.get(turn_id)
        if found is None:
            return None
        turn, at = found
        if time.monotonic() - at > self._seconds:
            del self._turns[turn_id]
            return None
        return turn if turn.user_id == user_id else None

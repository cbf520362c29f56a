"""Publishing one turn's events to its Redis stream."""

from __future__ import annotations

from typing import Any

import redis

from shared.messaging import events


class TurnEvents:
    """The event stream of one turn; terminal events start the stream's expiry."""

    def __init__(self, r: redis.Redis, turn_id: str, ttl_seconds: int) -> None:
        self.redis = r
        self.turn_id = turn_id
        self.ttl_seconds = ttl_seconds

    def emit(self, event: str, data: dict[str, Any] | None = None) -> None:
        events.publish(self.redis, self.turn_id, event, data or {}, ttl_seconds=self.ttl_seconds)

    def start(self, session_id: str, data: dict[str, Any]) -> None:
        """`turn.started`, then the session's waiting notices, in one Redis round trip (a failure raises, as emit's)."""
        events.start_turn(self.redis, self.turn_id, session_id, data)

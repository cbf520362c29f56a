"""Publishing one turn's events to its Redis stream."""

from __future__ import annotations

import logging
from typing import Any

import redis

from shared import events

log = logging.getLogger(__name__)


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

    def deliver_notices(self, session_id: str) -> None:
        """Take the session's waiting notices (a review's `review.completed`) onto this turn's stream."""
        try:
            events.deliver_notices(self.redis, session_id, self.turn_id)
        except (redis.RedisError, OSError):
            log.warning("could not deliver the session's notices to this turn", exc_info=True)

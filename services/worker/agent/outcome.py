"""How a turn ended, and the errors that must not end it (the task retries those instead)."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy.exc import OperationalError

from shared.models.turns import TurnStatus

# The database or Redis blinked: nothing is wrong with the turn, so the task retries it later.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (OperationalError, redis.ConnectionError, redis.TimeoutError)

INTERNAL_ERROR_MESSAGE = "The agent hit an internal error; the turn was stopped."
CANCELLED_MESSAGE = "Cancelled by the client."


@dataclass(frozen=True)
class Outcome:
    """The final state one turn is recorded with."""

    status: TurnStatus
    output: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    @property
    def event(self) -> tuple[str, dict]:
        """The terminal event for this outcome (its usage is added by the caller)."""
        if self.status == TurnStatus.completed:
            return "turn.completed", {"output": self.output}
        if self.status == TurnStatus.cancelled:
            return "turn.cancelled", {}
        return "turn.failed", {"error": {"code": self.error_code, "message": self.error_message}}

"""One payload model per task: only ids travel through the broker."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RunTurn(BaseModel):
    """Drain a session starting with this turn."""

    model_config = ConfigDict(extra="forbid")

    turn_id: str
    session_id: str


class SweepTurns(BaseModel):
    """Re-send stuck turns and trim expired streams."""

    model_config = ConfigDict(extra="forbid")

"""Turns: one user input and the agent's work on it, run in acceptance order per session."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any

from pydantic import Field as PydanticField
from pydantic import ConfigDict, StringConstraints, ValidationInfo, field_validator
from sqlalchemy import Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, json_field, time_field


class TurnStatus(str, Enum):
    queued = "queued"
    running = "running"
    awaiting_approval = "awaiting_approval"
    awaiting_input = "awaiting_input"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"


TERMINAL_STATUSES = frozenset({TurnStatus.completed, TurnStatus.failed, TurnStatus.cancelled})
# A parked turn waits for a person (an approval, an answer to `clarify`) and holds no worker.
PARKED_STATUSES = (TurnStatus.awaiting_approval.value, TurnStatus.awaiting_input.value)


class Turn(SQLModel, table=True):
    __tablename__ = "turns"
    __table_args__ = (
        UniqueConstraint("session_id", "seq", name="uq_turns_session_seq"),
        UniqueConstraint("user_id", "idempotency_key", name="uq_turns_user_idempotency"),
        Index("ix_turns_status_created", "status", "created_at"),
        # a session's unfinished turns, a user's unsent ones: found without reading the finished history
        Index("ix_turns_session_status", "session_id", "status"),
        Index("ix_turns_user_status_sent", "user_id", "status", "enqueued_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    session_id: str = Field(foreign_key="sessions.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    seq: int = Field(nullable=False)
    status: str = Field(default=TurnStatus.queued.value, max_length=24)
    input: str = Field(sa_column=Column(Text, nullable=False))
    output: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    error_code: str | None = Field(default=None, max_length=64)
    error_message: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    usage: dict[str, Any] = json_field()
    idempotency_key: str | None = Field(default=None, max_length=255)
    request_hash: str | None = Field(default=None, max_length=64)
    cancel_requested: bool = Field(default=False, nullable=False)
    interactive: bool = Field(default=True, nullable=False)  # False: nobody can answer an approval question
    max_iterations: int | None = Field(default=None)  # this turn's own iteration budget (a scheduled job's)
    attempts: int = Field(default=0, nullable=False)
    worker_id: str | None = Field(default=None, max_length=128)
    created_at: datetime = created_at_field()
    enqueued_at: datetime | None = time_field()
    started_at: datetime | None = time_field()
    heartbeat_at: datetime | None = time_field()
    finished_at: datetime | None = time_field()


class TurnCreate(SQLModel):
    """A turn's body: the user's text, and the ids of files uploaded for it (at most 10, each the caller's own).

    With attachments the text may be empty (a voice note or a photo alone says enough)."""

    model_config = ConfigDict(extra="forbid")

    # declared first so that `input`'s check can see them
    attachments: list[Annotated[str, StringConstraints(min_length=1, max_length=40)]] = Field(
        default_factory=list, max_length=10)
    input: str = PydanticField(default="", validate_default=True)

    @field_validator("input")
    @classmethod
    def _something_said(cls, value: str, info: ValidationInfo) -> str:
        if not value and not info.data.get("attachments"):
            raise ValueError("String should have at least 1 character (unless attachments are given)")
        return value


class TurnPublic(SQLModel):
    id: str
    session_id: str
    seq: int
    status: str
    input: str
    output: str | None
    error: dict[str, str] | None
    usage: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, turn: Turn) -> "TurnPublic":
        error = None
        if turn.error_code:
            error = {"code": turn.error_code, "message": turn.error_message or ""}
        return cls(
            id=turn.id,
            session_id=turn.session_id,
            seq=turn.seq,
            status=turn.status,
            input=turn.input,
            output=turn.output,
            error=error,
            usage=turn.usage or {},
            created_at=turn.created_at,
            started_at=turn.started_at,
            finished_at=turn.finished_at,
        )

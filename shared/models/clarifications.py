"""Clarifications: a multiple-choice question the agent parked its turn on, and the user's answer.

The row names the turn and the tool call (`clarify`) it parked, so the answer resumes exactly that call.
Unanswered by `expires_at`, it is settled as `expired` and the turn goes on with "no answer".
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import ConfigDict
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import UTCDateTime, created_at_field, json_field, time_field


class ClarificationStatus(str, Enum):
    pending = "pending"
    answered = "answered"
    expired = "expired"


class Clarification(SQLModel, table=True):
    __tablename__ = "clarifications"
    __table_args__ = (
        Index("ix_clarifications_user_status", "user_id", "status"),
        Index("ix_clarifications_status_expires", "status", "expires_at"),
        Index("ix_clarifications_turn_call", "turn_id", "tool_call_id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    turn_id: str = Field(foreign_key="turns.id", max_length=40)
    tool_call_id: str = Field(max_length=255)
    question: str = Field(sa_column=Column(Text, nullable=False))
    choices: list[Any] = json_field(list)
    status: str = Field(default=ClarificationStatus.pending.value, max_length=16)
    choice: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    answered_at: datetime | None = time_field()
    used_at: datetime | None = time_field()  # when the resumed turn took the answer
    expires_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    created_at: datetime = created_at_field()


class ClarificationAnswer(SQLModel):
    """The user's answer: one of the choices."""

    model_config = ConfigDict(extra="forbid")

    choice: str = Field(min_length=1, max_length=2000)


class ClarificationPublic(SQLModel):
    id: str
    session_id: str
    turn_id: str
    question: str
    choices: list[str]
    status: str
    choice: str | None
    answered_at: datetime | None
    expires_at: datetime
    created_at: datetime

    @classmethod
    def of(cls, row: Clarification) -> "ClarificationPublic":
        return cls(id=row.id, session_id=row.session_id, turn_id=row.turn_id, question=row.question,
                   choices=[str(c) for c in row.choices or []], status=row.status, choice=row.choice,
                   answered_at=row.answered_at, expires_at=row.expires_at, created_at=row.created_at)


class ClarificationList(SQLModel):
    data: list[ClarificationPublic]

"""Delegations: the children a turn's `delegate_task` call started, one row per task.

A row links the parent (turn, session, tool call) to the child's own session and turn. It is `running`
until the child's outcome is recorded here (`completed`, `failed`, `budget_exhausted`, `timed_out`,
`cancelled`) or the task was refused at once (`refused`, no child started). The parent turn parks in
`awaiting_children` and resumes when its call's last row settles; the rows are then its tool result.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import UTCDateTime, created_at_field, time_field


CHILD_SOURCE = "delegate"  # the source of a child's session: its turns get the child toolset


class DelegationStatus(str, Enum):
    running = "running"
    completed = "completed"
    failed = "failed"
    budget_exhausted = "budget_exhausted"
    timed_out = "timed_out"
    cancelled = "cancelled"
    refused = "refused"


class Delegation(SQLModel, table=True):
    __tablename__ = "delegations"
    __table_args__ = (
        Index("ix_delegations_turn_call", "turn_id", "tool_call_id"),
        Index("ix_delegations_status_deadline", "status", "deadline_at"),
        Index("ix_delegations_child_turn", "child_turn_id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)  # the parent's: forgetting it takes the rows
    turn_id: str = Field(foreign_key="turns.id", max_length=40)  # the parent turn, parked on `tool_call_id`
    tool_call_id: str = Field(max_length=255)
    position: int = Field(nullable=False)  # the task's index in the call's `tasks`
    goal: str = Field(sa_column=Column(Text, nullable=False))
    # No foreign keys: forgetting a child session alone leaves the parent's record of what it did.
    child_session_id: str | None = Field(default=None, max_length=40)
    child_turn_id: str | None = Field(default=None, max_length=40)
    status: str = Field(default=DelegationStatus.running.value, max_length=24)
    summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    deadline_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    created_at: datetime = created_at_field()
    finished_at: datetime | None = time_field()

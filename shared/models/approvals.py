"""Approvals: every decision the approval gate took on a command, and the ones a human must take.

A row is written for each command the gate did not simply let through: refusals (hard line, deny
list, the guardian, unattended work), the guardian's and a session's automatic approvals, and the
questions a human must answer (status `pending` until decided, denied or expired). A pending row
names the turn and the tool call it parked, so the decision resumes exactly that call.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import ConfigDict
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, time_field


class ApprovalStatus(str, Enum):
    pending = "pending"
    approved = "approved"
    denied = "denied"
    expired = "expired"


class ApprovalScope(str, Enum):
    once = "once"
    session = "session"


DECIDED = frozenset({ApprovalStatus.approved, ApprovalStatus.denied, ApprovalStatus.expired})


class Approval(SQLModel, table=True):
    __tablename__ = "approvals"
    __table_args__ = (
        Index("ix_approvals_user_created", "user_id", "created_at"),
        Index("ix_approvals_status_expires", "status", "expires_at"),
        Index("ix_approvals_turn_call", "turn_id", "tool_call_id"),
        Index("ix_approvals_session_scope", "session_id", "scope", "status"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    turn_id: str = Field(foreign_key="turns.id", max_length=40)
    tool_call_id: str = Field(max_length=255)
    command: str = Field(sa_column=Column(Text, nullable=False))
    reason: str = Field(sa_column=Column(Text, nullable=False))
    rule: str = Field(max_length=32)  # the gate step that decided: hardline, deny_list, guardian, dangerous, …
    key: str | None = Field(default=None, max_length=255)  # the pattern a session-scoped approval remembers
    status: str = Field(default=ApprovalStatus.pending.value, max_length=16)
    scope: str = Field(default=ApprovalScope.once.value, max_length=16)
    decided_by: str | None = Field(default=None, max_length=64)  # a user id, or gate:<rule>, or "timeout"
    decided_at: datetime | None = time_field()
    used_at: datetime | None = time_field()  # when the resumed turn acted on the decision
    expires_at: datetime | None = time_field()
    created_at: datetime = created_at_field()


class ApprovalDecision(SQLModel):
    """A human's answer to one pending approval."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    scope: Literal["once", "session"] = "once"


class ApprovalPublic(SQLModel):
    id: str
    session_id: str
    turn_id: str
    command: str
    reason: str
    rule: str
    status: str
    scope: str
    decided_by: str | None
    decided_at: datetime | None
    expires_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, row: Approval) -> "ApprovalPublic":
        return cls(id=row.id, session_id=row.session_id, turn_id=row.turn_id, command=row.command,
                   reason=row.reason, rule=row.rule, status=row.status, scope=row.scope,
                   decided_by=row.decided_by, decided_at=row.decided_at, expires_at=row.expires_at,
                   created_at=row.created_at)


class ApprovalList(SQLModel):
    data: list[ApprovalPublic]

"""Memory writes waiting for approval, what each session's model knows of memory, and the api bodies."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlalchemy import JSON, Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import UTCDateTime, created_at_field, json_field, time_field


class StagedStatus(str, Enum):
    pending = "pending"
    approved = "approved"
    denied = "denied"
    expired = "expired"


class MemoryStagedWrite(SQLModel, table=True):
    """A memory write the agent made while MEMORY_WRITE_APPROVAL is on, kept until a person decides."""

    __tablename__ = "memory_staged_writes"
    __table_args__ = (Index("ix_memory_staged_writes_status_expires", "status", "expires_at"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    session_id: str | None = Field(default=None, max_length=40)
    target: str = Field(max_length=16)
    summary: str = Field(sa_column=Column(Text, nullable=False))
    request: dict[str, Any] = json_field()
    status: str = Field(default=StagedStatus.pending.value, max_length=16)
    created_at: datetime = created_at_field()
    expires_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    decided_at: datetime | None = time_field()


class MemorySnapshot(SQLModel, table=True):
    """Per session and target: the entries its model knows (frozen prompt plus notes sent since).

    `pending` is what the note on `pending_turn_id`'s user message told the model; it becomes
    `known` once that message is stored with the note, so a note lost to a crash is sent again.
    """

    __tablename__ = "memory_snapshots"

    session_id: str = Field(foreign_key="sessions.id", primary_key=True, max_length=40)
    target: str = Field(primary_key=True, max_length=16)
    known: list[str] = json_field(list)
    pending: list[str] | None = Field(default=None, sa_type=JSON)
    pending_turn_id: str | None = Field(default=None, max_length=40)
    updated_at: datetime = created_at_field()


class MemoryOperationBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["add", "replace", "remove"]
    content: str | None = None
    old_text: str | None = None


class MemoryWriteBody(BaseModel):
    """`POST /v1/memory`: one action, or a batch in `operations` (all-or-nothing)."""

    model_config = ConfigDict(extra="forbid")

    target: Literal["memory", "user"]
    action: Literal["add", "replace", "remove"] | None = None
    content: str | None = None
    old_text: str | None = None
    operations: list[MemoryOperationBody] | None = PydanticField(default=None, min_length=1)


class MemoryTargetView(BaseModel):
    entries: list[str]
    chars: int
    limit: int
    percent: int
    usage: str


class MemoryView(BaseModel):
    memory: MemoryTargetView
    user: MemoryTargetView
    write_approval: bool


class MemoryWriteResult(BaseModel):
    success: bool
    target: str
    usage: str
    entry_count: int
    message: str


class StagedWritePublic(BaseModel):
    id: str
    target: str
    summary: str
    request: dict[str, Any]
    status: str
    session_id: str | None
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None


class StagedWriteList(BaseModel):
    data: list[StagedWritePublic]


class StagedDecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]


class StagedDecision(BaseModel):
    staged: StagedWritePublic
    result: MemoryWriteResult | None = None

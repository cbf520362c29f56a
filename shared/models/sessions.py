"""Sessions (one conversation each) and their stored messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, time_field


class ChatSession(SQLModel, table=True):
    __tablename__ = "sessions"
    __table_args__ = (Index("ix_sessions_user_conversation", "user_id", "conversation_key"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    title: str | None = Field(default=None, max_length=200)
    source: str = Field(default="api", max_length=32)
    instructions: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    system_prompt: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    system_prompt_sha256: str | None = Field(default=None, max_length=64)
    turn_count: int = Field(default=0, nullable=False)
    # sha256 of (user, system prompt, first user message): how an OpenAI client's resent history finds its session
    conversation_key: str | None = Field(default=None, max_length=64)
    created_at: datetime = created_at_field()
    updated_at: datetime | None = time_field()
    # set once, by whoever fires the providers' on_session_end: /new (POST .../end) or idle expiry
    ended_at: datetime | None = time_field()


class Message(SQLModel, table=True):
    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("turn_id", "turn_position", name="uq_messages_turn_position"),
        Index("ix_messages_session_id_id", "session_id", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    turn_id: str | None = Field(default=None, foreign_key="turns.id", max_length=40)
    turn_position: int | None = Field(default=None)
    role: str = Field(max_length=16)
    content: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    api_content: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    tool_calls: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    tool_call_id: str | None = Field(default=None, max_length=128)
    name: str | None = Field(default=None, max_length=128)
    created_at: datetime = created_at_field()


class SessionCreate(SQLModel):
    title: str | None = Field(default=None, max_length=200)
    instructions: str | None = Field(default=None, max_length=20_000)


class SessionPublic(SQLModel):
    id: str
    title: str | None
    source: str
    system_prompt_sha256: str | None
    turn_count: int
    created_at: datetime
    updated_at: datetime | None


class SessionPage(SQLModel):
    data: list[SessionPublic]
    next_cursor: str | None


class MessagePublic(SQLModel):
    id: int
    session_id: str
    turn_id: str | None
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    created_at: datetime
    attachments: list[str] = Field(default_factory=list)  # ids of the files a user message carried


class MessagePage(SQLModel):
    data: list[MessagePublic]
    next_after: int | None


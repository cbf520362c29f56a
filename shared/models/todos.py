"""A session's plan list: the items the agent keeps with `todo`, kept outside the transcript so compression
never loses it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from shared.models.base import UTCDateTime, json_field

STATUSES = ("pending", "in_progress", "completed", "cancelled")


class SessionTodo(SQLModel, table=True):
    __tablename__ = "session_todos"

    session_id: str = Field(primary_key=True, foreign_key="sessions.id", max_length=40)
    items: list[Any] = json_field(list)  # [{"id": "1", "content": "…", "status": "pending"}, …]
    updated_at: datetime = Field(sa_type=UTCDateTime, nullable=False)

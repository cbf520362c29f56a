"""Attachments: a file a user sent into a session (photo, voice note, document), kept in their workspace.

The bytes live at `path`, relative to the user's workspace (`inbox/<date>/<name>`); the row says what the
content really is (`mime` sniffed from its bytes, never from its name) and which turn and message carried it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field

KINDS = ("image", "audio", "document")
MAX_PER_TURN = 10


class Attachment(SQLModel, table=True):
    """One stored file; `turn_id`/`message_id` are set once a turn carries it."""

    __tablename__ = "attachments"
    __table_args__ = (Index("ix_attachments_user_created", "user_id", "created_at"),
                      Index("ix_attachments_turn", "turn_id"))

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    session_id: str = Field(foreign_key="sessions.id", index=True, max_length=40)
    turn_id: str | None = Field(default=None, foreign_key="turns.id", max_length=40)
    message_id: int | None = Field(default=None, foreign_key="messages.id")
    kind: str = Field(max_length=16)
    filename: str = Field(max_length=255)
    mime: str = Field(max_length=100)
    size: int = Field(nullable=False)
    path: str = Field(max_length=1024)
    sha256: str = Field(max_length=64)
    transcript: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = created_at_field()


class AttachmentPublic(SQLModel):
    """What the upload answers and `GET /v1/attachments/{id}` shows."""

    id: str
    session_id: str
    kind: str
    filename: str
    mime: str
    size: int
    path: str
    sha256: str
    transcript: str | None
    created_at: datetime

    @classmethod
    def of(cls, row: Attachment) -> "AttachmentPublic":
        return cls.model_validate(row, from_attributes=True)


class AttachmentSaved(SQLModel):
    """What an upload answers (201)."""

    id: str
    kind: str
    filename: str
    mime: str
    size: int
    path: str

    @classmethod
    def of(cls, row: Attachment) -> "AttachmentSaved":
        return cls.model_validate(row, from_attributes=True)

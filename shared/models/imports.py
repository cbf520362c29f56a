"""The import ledger: which source objects (a Hermes Agent session, memory entry, skill) a user already imported."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field


class ImportRecord(SQLModel, table=True):
    __tablename__ = "import_ledger"

    user_id: str = Field(foreign_key="users.id", primary_key=True, max_length=40)
    kind: str = Field(primary_key=True, max_length=32)  # hermes-session, hermes-memory, hermes-skill
    source_key: str = Field(primary_key=True, max_length=200)  # the source's own id, or a digest of the entry
    target_id: str | None = Field(default=None, max_length=200)
    cursor: int | None = Field(default=None)  # a session's last imported source message id
    created_at: datetime = created_at_field()

"""Context compactions: where a session's working context was cut and what summary replaces the cut part.

Messages are never rewritten or deleted: the originals stay stored and searchable, and the worker
builds what the model sees from the latest applied compaction (its head, its summary, and every
message after `summarized_through_id`). Attempts that changed nothing are kept too, so a session
whose prompt cannot be shrunk stops paying for summary calls.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field


class CompactionOutcome(str, Enum):
    compacted = "compacted"  # applied, and the prompt is under the threshold again
    insufficient = "insufficient"  # applied, but the prompt is still over the threshold
    nothing = "nothing"  # not applied: nothing to summarise, or the summary freed nothing
    aborted = "aborted"  # not applied: the summary call failed on auth or network


APPLIED = (CompactionOutcome.compacted.value, CompactionOutcome.insufficient.value)
INEFFECTIVE = (CompactionOutcome.insufficient.value, CompactionOutcome.nothing.value)


class Compaction(SQLModel, table=True):
    __tablename__ = "compactions"
    __table_args__ = (Index("ix_compactions_session_id_id", "session_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    outcome: str = Field(max_length=16)
    head_through_id: int | None = Field(default=None)
    summarized_through_id: int | None = Field(default=None)
    summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    summary_role: str | None = Field(default=None, max_length=16)
    fallback: bool = Field(default=False)
    tokens_before: int = Field(default=0)
    tokens_after: int = Field(default=0)
    system_prompt_sha256: str | None = Field(default=None, max_length=64)
    created_at: datetime = created_at_field()

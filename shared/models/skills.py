"""Skills: provenance and usage per (user, skill name), and the shapes the api and tools show.

The files on disk hold what a skill says; this table holds where it came from and how it is used,
so the curator (stale / archived) and the review's write rules have something to read.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import UTCDateTime, created_at_field, json_field, time_field


class SkillOrigin(str, Enum):
    """Whose a skill is (Hermes Agent's provenance): only what a background review created is the agent's."""

    bundled = "bundled"  # the repository's skills/ folder, read-only
    user = "user"  # the user's: installed through the api, or created by the agent because the user asked
    agent = "agent"  # created by a background review: curatable, and later reviews may edit it


class SkillWriter(str, Enum):
    """Who is writing: the foreground agent, a background review, or the user (api)."""

    agent = "agent"
    review = "review"
    user = "user"


class SkillState(str, Enum):
    active = "active"
    stale = "stale"  # unused for a while: a label for the curator, still in the index; any use makes it active
    archived = "archived"  # moved to `.archive/`, invisible to the agent, restorable


class SkillRecord(SQLModel, table=True):
    """One skill as one user sees it; bundled skills get a row per user on first use."""

    __tablename__ = "skills"

    user_id: str = Field(foreign_key="users.id", primary_key=True, max_length=40)
    name: str = Field(primary_key=True, max_length=64)
    origin: str = Field(max_length=16)
    created_by: str | None = Field(default=None, max_length=16)
    state: str = Field(default=SkillState.active.value, max_length=16, index=True)
    pinned: bool = Field(default=False)
    view_count: int = Field(default=0)
    use_count: int = Field(default=0)
    patch_count: int = Field(default=0)
    created_at: datetime = created_at_field()
    updated_at: datetime | None = time_field()
    last_used_at: datetime | None = time_field()
    archived_at: datetime | None = time_field()

    @property
    def last_activity_at(self) -> datetime:
        """The latest of creation, last change and last use: what "unused for N days" counts from."""
        return max(t for t in (self.created_at, self.updated_at, self.last_used_at) if t is not None)


class SkillSummary(BaseModel):
    """One line of a listing."""

    name: str
    description: str
    origin: SkillOrigin
    state: SkillState
    created_by: SkillWriter | None = None
    pinned: bool = False
    view_count: int = 0
    use_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_used_at: datetime | None = None


class SkillDetail(SkillSummary):
    """A skill with its SKILL.md and the supporting files it holds."""

    content: str
    files: list[str]
    version: str | None = None
    license: str | None = None
    metadata: dict = PydanticField(default_factory=dict)


class SkillList(BaseModel):
    data: list[SkillSummary]


class SkillInstall(BaseModel):
    """A skill folder sent as JSON: SKILL.md's text and its supporting files by relative path."""

    model_config = ConfigDict(extra="forbid")

    name: str = PydanticField(min_length=1, max_length=200)
    content: str
    files: dict[str, str] = PydanticField(default_factory=dict)


class SkillStagedWrite(SQLModel, table=True):
    """A skill_manage write made while SKILL_WRITE_APPROVAL is on, kept with its diff until a person decides."""

    __tablename__ = "skill_staged_writes"
    __table_args__ = (Index("ix_skill_staged_writes_status_expires", "status", "expires_at"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    session_id: str | None = Field(default=None, max_length=40)
    writer: str = Field(max_length=16)  # replayed as this writer, under its rules
    action: str = Field(max_length=16)
    name: str = Field(max_length=64)
    arguments: dict[str, Any] = json_field()
    summary: str = Field(sa_column=Column(Text, nullable=False))
    diff: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default="pending", max_length=16)
    created_at: datetime = created_at_field()
    expires_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    decided_at: datetime | None = time_field()


class SkillStagedPublic(BaseModel):
    id: str
    action: str
    name: str
    writer: str
    summary: str
    diff: str
    arguments: dict[str, Any]
    status: str
    session_id: str | None
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None


class SkillStagedList(BaseModel):
    data: list[SkillStagedPublic]


class SkillStagedDecision(BaseModel):
    staged: SkillStagedPublic
    result: dict[str, Any] | None = None

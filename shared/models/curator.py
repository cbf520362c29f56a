"""The curator's ledger and schedule: per-user pass state, runs, and every skill transition they made.

A run is one curation pass or one user-asked restore; each transition row says which skill went from
which state to which, why and when, so `hstack curator log` explains every change and
`hstack curator restore NAME` can undo the last one.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import BaseModel
from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from shared.models.base import time_field


class RunKind(str, Enum):
    curation = "curation"  # a pass of the deterministic rules (beat or `hstack curator run`)
    restore = "restore"  # the user rolled one transition back (or one whole merge, by its umbrella)
    consolidation = "consolidation"  # the model pass that looked for overlapping skills and staged umbrellas
    merge = "merge"  # an approved consolidation: the umbrella created, the merged skills archived


class CuratorState(SQLModel, table=True):
    """When a user's last pass ran; a user first seen gets a row and no pass (the clock starts then)."""

    __tablename__ = "curator_state"

    user_id: str = Field(foreign_key="users.id", primary_key=True, max_length=40)
    last_pass_at: datetime = time_field(nullable=False)
    pass_count: int = Field(default=0)
    last_summary: str = Field(default="", max_length=240)


class CuratorRun(SQLModel, table=True):
    __tablename__ = "curator_runs"
    __table_args__ = (Index("ix_curator_runs_user_started", "user_id", "started_at"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    kind: str = Field(max_length=16)
    started_at: datetime = time_field(nullable=False)
    finished_at: datetime | None = time_field()
    backup_path: str | None = Field(default=None, max_length=500)  # relative to DATA_DIR
    summary: str = Field(default="", max_length=240)


class CuratorTransition(SQLModel, table=True):
    __tablename__ = "curator_transitions"
    __table_args__ = (Index("ix_curator_transitions_user_skill", "user_id", "skill", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="curator_runs.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    skill: str = Field(max_length=64)
    from_state: str = Field(max_length=16)
    to_state: str = Field(max_length=16)
    reason: str = Field(max_length=300)
    at: datetime = time_field(nullable=False)


class TransitionPublic(BaseModel):
    skill: str
    from_state: str
    to_state: str
    reason: str
    at: datetime


class RunPublic(BaseModel):
    """One run as `GET /v1/curator/runs` shows it."""

    id: str
    kind: RunKind
    started_at: datetime
    finished_at: datetime | None
    backup_path: str | None
    summary: str
    transitions: list[TransitionPublic]


class CuratorStatePublic(BaseModel):
    last_pass_at: datetime
    next_pass_after: datetime
    pass_count: int
    last_summary: str


class RunList(BaseModel):
    """The caller's runs, newest first, and when their next pass may come (null: not seen yet)."""

    data: list[RunPublic]
    state: CuratorStatePublic | None

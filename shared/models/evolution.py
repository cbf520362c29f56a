"""Skill evolution runs: one GEPA optimisation of one skill's text, its evidence, scores, cost and proposal.

The row is the run's whole record: what it was asked (skill, budget), how far it got (progress, calls,
tokens), what it measured (train and held-out scores of the current and the best text) and what it
proposed (a staged skill write, whose status says whether the owner approved). The text it replaced is
kept here too, so an applied proposal can be rolled back from this ledger.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, json_field, time_field


class EvolutionStatus(str, Enum):
    queued = "queued"
    running = "running"
    proposed = "proposed"  # a better text is staged for the owner's approval
    no_improvement = "no_improvement"  # nothing beat the current text on held-out by the margin
    cancelled = "cancelled"
    failed = "failed"


FINISHED = frozenset({EvolutionStatus.proposed, EvolutionStatus.no_improvement, EvolutionStatus.cancelled,
                      EvolutionStatus.failed})


class EvolutionRun(SQLModel, table=True):
    __tablename__ = "evolution_runs"
    __table_args__ = (Index("ix_evolution_runs_user_created", "user_id", "created_at"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    skill: str = Field(max_length=64)
    trigger: str = Field(default="manual", max_length=16)  # manual or schedule
    status: str = Field(default=EvolutionStatus.queued.value, max_length=16)
    cancel_requested: bool = Field(default=False)
    budget_metric_calls: int = Field(default=0)
    budget_tokens: int = Field(default=0)
    metric_calls: int = Field(default=0)
    model_calls: int = Field(default=0)
    prompt_tokens: int = Field(default=0)
    completion_tokens: int = Field(default=0)
    progress: float = Field(default=0.0)  # 0..1: metric calls spent over the budget, 1 when finished
    stage: str = Field(default="", max_length=120)  # what it is doing now, for the progress line
    worker: str | None = Field(default=None, max_length=120)
    heartbeat_at: datetime | None = time_field()
    evidence: dict[str, Any] = json_field()  # train / held-out session ids and task counts
    scores: dict[str, Any] = json_field()  # train_before, train_after, heldout_before, heldout_after, margin
    baseline: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # SKILL.md when the run began
    proposed: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    diff: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    staged_id: str | None = Field(default=None, max_length=40)
    summary: str = Field(default="", max_length=500)
    error: str | None = Field(default=None, max_length=500)
    created_at: datetime = created_at_field()
    started_at: datetime | None = time_field()
    finished_at: datetime | None = time_field()
    restored_at: datetime | None = time_field()


class EvolutionStart(BaseModel):
    """POST /v1/evolution/runs: the skill to evolve and, optionally, fewer metric calls than the default."""

    model_config = ConfigDict(extra="forbid")

    skill: str = PydanticField(min_length=1, max_length=64)
    budget: int | None = PydanticField(default=None, ge=1, le=100_000)


class EvolutionRunPublic(BaseModel):
    id: str
    skill: str
    trigger: str
    status: EvolutionStatus
    cancel_requested: bool
    progress: float
    stage: str
    budget_metric_calls: int
    budget_tokens: int
    metric_calls: int
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    evidence: dict[str, Any]
    scores: dict[str, Any]
    diff: str | None
    staged_id: str | None
    proposal: str | None = None  # pending / approved / denied / expired: the owner's decision on the staged write
    summary: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    restored_at: datetime | None


class EvolutionRunList(BaseModel):
    data: list[EvolutionRunPublic]

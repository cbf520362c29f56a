"""Scheduled jobs and their runs: a job is a prompt the agent runs on a schedule in the job's own session;
each run is one turn of that session, with its real outcome and where its answer was delivered."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic import Field as PydanticField
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, json_field, time_field

JOB_STATUSES = ("active", "paused", "done")
RUN_STATUSES = ("running", "completed", "failed", "refused", "missed")
DELIVER_PATTERN = r"^(origin|none|webhook:[A-Za-z0-9][A-Za-z0-9._-]{0,63}|telegram:-?[0-9]{1,20})$"
SKILL_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


class CronJob(SQLModel, table=True):
    """A user's scheduled prompt; `next_run_at` is when the tick claims it next (None once done)."""

    __tablename__ = "cron_jobs"
    __table_args__ = (Index("ix_cron_jobs_due", "status", "next_run_at"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    name: str = Field(max_length=200)
    schedule: str = Field(max_length=200)
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    deliver: str = Field(default="none", max_length=100)
    skill: str | None = Field(default=None, max_length=64)
    timezone: str | None = Field(default=None, max_length=64)
    status: str = Field(default="active", max_length=16)
    max_iterations: int | None = Field(default=None)
    timeout_seconds: float | None = Field(default=None)
    # dangerous-command kinds (the approval gate's words, e.g. "recursive delete") its unattended runs may run
    allow: list[str] = json_field(list)
    next_run_at: datetime | None = time_field()
    last_run_at: datetime | None = time_field()
    last_status: str | None = Field(default=None, max_length=16)
    created_at: datetime = created_at_field()


class CronRun(SQLModel, table=True):
    """One run of a job: the turn it enqueued and how that turn really ended."""

    __tablename__ = "cron_runs"
    __table_args__ = (Index("ix_cron_runs_job_started", "job_id", "started_at"),
                      Index("ix_cron_runs_status", "status"))

    id: str = Field(primary_key=True, max_length=40)
    job_id: str = Field(foreign_key="cron_jobs.id", max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    turn_id: str | None = Field(default=None, foreign_key="turns.id", max_length=40)
    status: str = Field(default="running", max_length=16)
    due_at: datetime = time_field(nullable=False)
    started_at: datetime = created_at_field()
    finished_at: datetime | None = time_field()
    late_by_seconds: float = Field(default=0.0, nullable=False)
    output: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    delivery_id: str | None = Field(default=None, max_length=40)


# -- API bodies and answers ------------------------------------------------------------------------

class JobFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = PydanticField(default=None, min_length=1, max_length=200)
    schedule: str | None = PydanticField(default=None, min_length=1, max_length=200)
    prompt: str | None = PydanticField(default=None, min_length=1, max_length=20_000)
    deliver: str | None = PydanticField(default=None, pattern=DELIVER_PATTERN)
    skill: str | None = PydanticField(default=None, pattern=SKILL_PATTERN)
    timezone: str | None = PydanticField(default=None, min_length=1, max_length=64)
    max_iterations: int | None = PydanticField(default=None, ge=1, le=500)
    timeout_seconds: float | None = PydanticField(default=None, ge=10, le=86_400)
    allow: list[Annotated[str, StringConstraints(min_length=1, max_length=120)]] | None = PydanticField(
        default=None, max_length=20)


class JobCreate(JobFields):
    schedule: str = PydanticField(min_length=1, max_length=200)
    prompt: str = PydanticField(min_length=1, max_length=20_000)


class JobUpdate(JobFields):
    status: str | None = PydanticField(default=None, pattern=r"^(active|paused)$")


class JobPublic(BaseModel):
    id: str
    name: str
    schedule: str
    prompt: str
    deliver: str
    skill: str | None
    timezone: str | None
    status: str
    max_iterations: int | None
    timeout_seconds: float | None
    allow: list[str]
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_status: str | None
    session_id: str
    created_at: datetime


class RunPublic(BaseModel):
    id: str
    job_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    turn_id: str | None
    output: str | None
    error: str | None
    late_by_seconds: float

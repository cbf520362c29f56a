"""Request and response bodies of the native api that the shared models do not already define."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.models.sessions import SessionCreate
from shared.models.users import UserCreate, UserPublic


class UserCreateBody(UserCreate):
    model_config = ConfigDict(extra="forbid")


class SessionCreateBody(SessionCreate):
    model_config = ConfigDict(extra="forbid")


class SessionUpdateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(max_length=200)


class UserList(BaseModel):
    data: list[UserPublic]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    checks: dict[str, str]


class RecentTurn(BaseModel):
    id: str
    session_id: str
    user_id: str
    status: str
    created_at: datetime
    finished_at: datetime | None


class AdminStatus(BaseModel):
    services: list[dict[str, Any]]
    queues: dict[str, int]
    turns: dict[str, int]
    recent_turns: list[RecentTurn]


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries documenting our error body for these statuses."""
    return {status: {"model": ErrorBody} for status in statuses}

"""Users and their API keys (stored hashed)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, time_field


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(unique=True, index=True, max_length=64)
    timezone: str | None = Field(default=None, max_length=64)  # IANA name; None: the server's
    created_at: datetime = created_at_field()


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    key_hash: str = Field(unique=True, max_length=64)
    prefix: str = Field(max_length=16)
    created_at: datetime = created_at_field()
    revoked_at: datetime | None = time_field()


class UserCreate(BaseModel):
    name: str = PydanticField(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class UserUpdate(BaseModel):
    """An admin's change to a user: the time zone its scheduled jobs are read in (null: the server's)."""

    model_config = ConfigDict(extra="forbid")

    timezone: str | None = PydanticField(min_length=1, max_length=64)


class UserPublic(SQLModel):
    id: str
    name: str
    timezone: str | None = None
    created_at: datetime


class ApiKeyIssued(SQLModel):
    id: str
    user_id: str
    key: str
    prefix: str
    created_at: datetime


class ApiKeyPublic(SQLModel):
    """A key as listed: never the key or its digest, only the prefix it starts with."""

    id: str
    user_id: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyList(BaseModel):
    data: list[ApiKeyPublic]

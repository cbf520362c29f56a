"""Column types shared by every table."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, DateTime
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field

from shared.clock import utcnow

# The largest integer both databases store (SQLite INTEGER, Postgres BIGINT): a bound for every
# integer a client may send, so none reaches a driver that cannot bind it.
MAX_DB_INT = 2**63 - 1


class UTCDateTime(TypeDecorator):
    """Stores UTC, returns timezone-aware UTC on SQLite and Postgres alike."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def created_at_field():
    """A `created_at` column defaulting to now."""
    return Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


def time_field(nullable: bool = True, index: bool = False):
    """An optional UTC timestamp column."""
    return Field(default=None, sa_type=UTCDateTime, nullable=nullable, index=index)


def json_field(default_factory=dict):
    """A JSON column (JSON on SQLite, JSON on Postgres)."""
    return Field(default_factory=default_factory, sa_type=JSON, nullable=False)

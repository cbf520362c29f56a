"""Plain factory functions for test data."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from shared.db import Database
from shared.stores import sessions, users

SKILL = "---\nname: {0}\ndescription: The {0} procedure.\n---\n1. Do it.\n"  # a SKILL.md; .format(name)


@dataclass(frozen=True)
class TestUser:
    id: str
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def make_user(db: Database, name: str | None = None) -> TestUser:
    """A new user with one API key."""
    user = users.create_user(db, name or f"user-{uuid.uuid4().hex[:10]}")
    _, key = users.create_key(db, user.id)
    return TestUser(id=user.id, name=user.name, key=key)


def make_session(db: Database, user_id: str, **kwargs):
    return sessions.create_session(db, user_id, **kwargs)

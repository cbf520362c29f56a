"""Plain factory functions for test data."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import inspect as sa_inspect

from shared.clock import utcnow
from shared.db import Database
from shared.ids import new_id
from shared.models.users import User
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


def make_user_of_revision(db: Database, name: str | None = None) -> User:
    """A new user written with only the columns its table has now: a migration test runs at an old revision,
    before columns today's model holds (a user's time zone) existed."""
    row = User(id=new_id("usr"), name=name or f"user-{uuid.uuid4().hex[:10]}", created_at=utcnow())
    present = {c["name"] for c in sa_inspect(db.engine).get_columns(User.__tablename__)}
    values = {c.name: getattr(row, c.name) for c in User.__table__.columns if c.name in present}
    with db.engine.begin() as conn:
        conn.execute(User.__table__.insert().values(**values))
    return row

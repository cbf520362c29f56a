"""Skill provenance and usage rows: one per (user, skill name), counters updated in SQL so none is lost."""

from __future__ import annotations

from typing import Any, Callable

from sqlalchemy import case, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, select

from shared import clock
from shared.db import Database
from shared.models.skills import SkillRecord, SkillState

_KEY_COLUMNS = ("user_id", "name")


def _insert(s: Session):
    """The dialect's INSERT, which knows ON CONFLICT on SQLite and Postgres alike."""
    module = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    return module.insert(SkillRecord)


def _ensure(s: Session, user_id: str, name: str, origin: str, created_by: str | None = None) -> None:
    """Insert the row with defaults unless it exists (a concurrent insert is not an error)."""
    values = {"user_id": user_id, "name": name, "origin": origin, "created_by": created_by,
              "state": SkillState.active.value, "pinned": False, "view_count": 0, "use_count": 0,
              "patch_count": 0, "created_at": clock.utcnow()}
    s.execute(_insert(s).values(**values).on_conflict_do_nothing(index_elements=list(_KEY_COLUMNS)))


def _where(user_id: str, name: str):
    return (SkillRecord.user_id == user_id, SkillRecord.name == name)


def records(db: Database, user_id: str) -> dict[str, SkillRecord]:
    """Every row of this user, by skill name."""
    with db.read() as s:
        return {row.name: row for row in s.exec(select(SkillRecord).where(SkillRecord.user_id == user_id))}


def record(db: Database, user_id: str, name: str) -> SkillRecord | None:
    with db.read() as s:
        return s.get(SkillRecord, (user_id, name))


def created(db: Database, user_id: str, name: str, origin: str, created_by: str) -> None:
    """A new skill of this name: fresh provenance and counters, replacing any leftover row."""
    now = clock.utcnow()
    fresh: dict[str, Any] = {"origin": origin, "created_by": created_by, "state": SkillState.active.value,
                             "pinned": False, "view_count": 0, "use_count": 0, "patch_count": 0,
                             "created_at": now, "updated_at": now, "last_used_at": None, "archived_at": None}
    with db.write() as s:
        statement = _insert(s).values(user_id=user_id, name=name, **fresh)
        s.execute(statement.on_conflict_do_update(index_elements=list(_KEY_COLUMNS), set_=fresh))


def changed(db: Database, user_id: str, name: str, origin: str) -> None:
    """Count one change of a skill's files (edit, patch, write_file, remove_file)."""
    with db.write() as s:
        _ensure(s, user_id, name, origin)
        s.execute(update(SkillRecord).where(*_where(user_id, name))
                  .values(patch_count=SkillRecord.patch_count + 1, updated_at=clock.utcnow()))


def viewed(db: Database, user_id: str, name: str, origin: str) -> None:
    """Count a view, which is also a use; a stale skill becomes active again."""
    values: dict[str, Any] = {
        "view_count": SkillRecord.view_count + 1,
        "use_count": SkillRecord.use_count + 1,
        "last_used_at": clock.utcnow(),
        "state": case((SkillRecord.state == SkillState.stale.value, SkillState.active.value),
                      else_=SkillRecord.state),
    }
    with db.write() as s:
        _ensure(s, user_id, name, origin)
        s.execute(update(SkillRecord).where(*_where(user_id, name)).values(**values))


def set_pinned(db: Database, user_id: str, name: str, origin: str, pinned: bool) -> None:
    with db.write() as s:
        _ensure(s, user_id, name, origin)
        s.execute(update(SkillRecord).where(*_where(user_id, name)).values(pinned=pinned))


def set_state(db: Database, user_id: str, name: str, origin: str, state: SkillState,
              also: Callable[[Session], None] | None = None) -> None:
    """Record a state; archived_at is set when archiving and cleared otherwise.

    `also` writes more rows in the same transaction (the curator's ledger row commits with its change).
    """
    archived_at = clock.utcnow() if state is SkillState.archived else None
    with db.write() as s:
        _ensure(s, user_id, name, origin)
        s.execute(update(SkillRecord).where(*_where(user_id, name))
                  .values(state=state.value, archived_at=archived_at))
        if also is not None:
            also(s)


def agent_created(db: Database, user_id: str) -> list[SkillRecord]:
    """The rows the curator may act on: skills the agent or a review wrote, by name."""
    with db.read() as s:
        query = select(SkillRecord).where(SkillRecord.user_id == user_id, SkillRecord.origin == "agent")
        return list(s.exec(query.order_by(SkillRecord.name)))

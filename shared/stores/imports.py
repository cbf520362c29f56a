"""Imports from another agent, made idempotent by a ledger of the source objects each user already has.

A session is imported in one transaction with its ledger row, so a crash leaves it either whole or
absent; the ledger keeps the last source message id, so a later run adds only what is new.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, update
from sqlmodel import Session

from shared.db import Database
from shared.ids import new_id
from shared.models.imports import ImportRecord
from shared.models.sessions import ChatSession, Message

TITLE_CHARS = 200


@dataclass(frozen=True)
class SessionImport:
    """What importing one source session did."""

    session_id: str
    created: bool
    added: int


def recorded(db: Database, user_id: str, kind: str, source_key: str) -> ImportRecord | None:
    """The ledger row of a source object this user imported, if any."""
    with db.read() as s:
        return s.get(ImportRecord, (user_id, kind, source_key))


def record(db: Database, user_id: str, kind: str, source_key: str, target_id: str | None = None) -> bool:
    """Note an object as imported; False when it already was."""
    with db.write() as s:
        if s.get(ImportRecord, (user_id, kind, source_key)) is not None:
            return False
        s.add(ImportRecord(user_id=user_id, kind=kind, source_key=source_key, target_id=target_id))
        return True


def import_session(db: Database, user_id: str, kind: str, source_key: str, *, title: str | None, source: str,
                   created_at: datetime, messages: list[dict[str, Any]]) -> SessionImport:
    """Create the session (first run) and add the messages whose `source_id` is past the ledger's cursor.

    Each message dict holds Message fields plus `source_id`, the source's own increasing message id.
    """
    with db.write() as s:
        entry = s.get(ImportRecord, (user_id, kind, source_key))
        created = entry is None
        if created:
            entry = _new_session(s, user_id, kind, source_key, title, source, created_at)
        fresh = [m for m in messages if m["source_id"] > (entry.cursor or 0)]
        if fresh:
            rows = [{**{k: v for k, v in m.items() if k != "source_id"}, "session_id": entry.target_id}
                    for m in fresh]
            s.execute(insert(Message), rows)  # one executemany: a long history imports in seconds
            s.execute(update(ChatSession).where(ChatSession.id == entry.target_id)
                      .values(updated_at=fresh[-1]["created_at"]))
            entry.cursor = fresh[-1]["source_id"]
            s.add(entry)
        return SessionImport(entry.target_id, created, len(fresh))


def _new_session(s: Session, user_id: str, kind: str, source_key: str, title: str | None, source: str,
                 created_at: datetime) -> ImportRecord:
    session = ChatSession(id=new_id("ses"), user_id=user_id, title=(title or None) and title[:TITLE_CHARS],
                          source=source, created_at=created_at, updated_at=created_at)
    s.add(session)
    s.flush()
    entry = ImportRecord(user_id=user_id, kind=kind, source_key=source_key, target_id=session.id, cursor=0)
    s.add(entry)
    return entry

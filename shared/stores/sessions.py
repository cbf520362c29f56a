"""Sessions and their transcripts."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import NotFound
from shared.ids import new_id
from shared.models.sessions import ChatSession, Message


def create_session(
    db: Database, user_id: str, *, title: str | None = None, source: str = "api", instructions: str | None = None
) -> ChatSession:
    row = ChatSession(id=new_id("ses"), user_id=user_id, title=title, source=source, instructions=instructions)
    with db.write() as s:
        s.add(row)
    return row


def get_session(db: Database, user_id: str | None, session_id: str) -> ChatSession:
    """A session of this user (any user when user_id is None); another user's is NotFound."""
    with db.read() as s:
        row = s.get(ChatSession, session_id)
    if row is None or (user_id is not None and row.user_id != user_id):
        raise NotFound("No such session.", code="session_not_found")
    return row


def list_sessions(db: Database, user_id: str, *, cursor: str | None, limit: int) -> tuple[list[ChatSession], str | None]:
    """Newest first; the cursor is the last id of the previous page."""
    query = select(ChatSession).where(ChatSession.user_id == user_id)
    if cursor:
        query = query.where(ChatSession.id < cursor)
    query = query.order_by(ChatSession.id.desc()).limit(limit + 1)
    with db.read() as s:
        rows = list(s.exec(query))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].id if more and rows else None)


def freeze_system_prompt(db: Database, session_id: str, prompt: str) -> ChatSession:
    """Store the session's system prompt once; the first writer wins and later calls read it back."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    with db.write() as s:
        s.execute(
            update(ChatSession)
            .where(ChatSession.id == session_id, ChatSession.system_prompt.is_(None))
            .values(system_prompt=prompt, system_prompt_sha256=digest)
        )
        return s.get(ChatSession, session_id)


def append_messages(db: Database, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
    """Store messages in order; a (turn_id, turn_position) already stored is skipped, not duplicated."""
    with db.write() as s:
        return insert_messages(s, session_id, messages)


def insert_messages(s: Session, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
    """`append_messages` inside a write transaction a store already holds."""
    stored: list[Message] = []
    for data in messages:
        row = Message(session_id=session_id, **data)
        if row.turn_id is not None and row.turn_position is not None:
            existing = s.exec(
                select(Message).where(Message.turn_id == row.turn_id, Message.turn_position == row.turn_position)
            ).first()
            if existing is not None:
                stored.append(existing)
                continue
        s.add(row)
        s.flush()
        stored.append(row)
    s.execute(update(ChatSession).where(ChatSession.id == session_id).values(updated_at=utcnow()))
    return stored


def set_api_content(db: Database, message_id: int, text: str) -> str:
    """Record what the model is sent for a message, once; returns the stored text (the first writer wins)."""
    with db.write() as s:
        s.execute(
            update(Message).where(Message.id == message_id, Message.api_content.is_(None)).values(api_content=text)
        )
        return s.exec(select(Message.api_content).where(Message.id == message_id)).one()


def list_messages(db: Database, session_id: str, *, after: int | None = None, limit: int | None = None) -> list[Message]:
    query = select(Message).where(Message.session_id == session_id)
    if after is not None:
        query = query.where(Message.id > after)
    query = query.order_by(Message.id)
    if limit is not None:
        query = query.limit(limit)
    with db.read() as s:
        return list(s.exec(query))


def turn_messages(db: Database, turn_id: str) -> list[Message]:
    with db.read() as s:
        return list(s.exec(select(Message).where(Message.turn_id == turn_id).order_by(Message.turn_position)))


def count_sessions(db: Database) -> int:
    with db.read() as s:
        return s.exec(select(func.count()).select_from(ChatSession)).one()



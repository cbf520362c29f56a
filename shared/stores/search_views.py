"""Read-only views of a user's stored transcripts for `session_search`: around a message, a session's
head and tail, and the recent sessions. Each checks the session belongs to the user (else NotFound)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from sqlalchemy import func, true
from sqlmodel import Session, select

from shared.db import Database
from shared.errors import NotFound
from shared.models.sessions import ChatSession, Message

PREVIEW_CHARS = 160


@dataclass(frozen=True)
class Window:
    """Messages around an anchor, in order, and how many more lie before and after them."""

    messages: list[Message]
    before: int
    after: int


@dataclass(frozen=True)
class SessionSummary:
    """A session as browse lists it: no model summary, only what is stored."""

    id: str
    title: str | None
    source: str
    started_at: datetime
    last_active: datetime
    message_count: int
    preview: str


def _owned(s: Session, user_id: str, session_id: str) -> ChatSession:
    row = s.get(ChatSession, session_id)
    if row is None or row.user_id != user_id:
        raise NotFound(f"No session {session_id!r} of yours.", code="session_not_found")
    return row


def _in_session(session_id: str, roles: Sequence[str]):
    return select(Message).where(Message.session_id == session_id, Message.role.in_(list(roles)))


def messages_around(
    db: Database, user_id: str, session_id: str, message_id: int, window: int, roles: Sequence[str]
) -> Window:
    """Up to `window` messages of these roles before and after `message_id` in its session, with it."""
    with db.read() as s:
        _owned(s, user_id, session_id)
        anchor = s.get(Message, message_id)
        if anchor is None or anchor.session_id != session_id:
            raise NotFound(f"No message {message_id} in session {session_id!r}.", code="message_not_found")
        base = _in_session(session_id, roles)
        older = list(s.exec(base.where(Message.id < message_id).order_by(Message.id.desc()).limit(window)))
        newer = list(s.exec(base.where(Message.id > message_id).order_by(Message.id).limit(window)))
        before = _count(s, session_id, roles, Message.id < (older[-1].id if older else message_id))
        after = _count(s, session_id, roles, Message.id > (newer[-1].id if newer else message_id))
    return Window(list(reversed(older)) + [anchor] + newer, before, after)


def _count(s: Session, session_id: str, roles: Sequence[str], condition) -> int:
    query = select(func.count()).select_from(Message).where(
        Message.session_id == session_id, Message.role.in_(list(roles)), condition
    )
    return s.exec(query).one()


def session_head_tail(
    db: Database, user_id: str, session_id: str, head: int, tail: int, roles: Sequence[str]
) -> tuple[ChatSession, list[Message], int]:
    """The session, its first `head` and last `tail` messages of these roles (all when few), and the total."""
    with db.read() as s:
        row = _owned(s, user_id, session_id)
        total = _count(s, session_id, roles, true())
        base = _in_session(session_id, roles)
        if total <= head + tail:
            return row, list(s.exec(base.order_by(Message.id))), total
        first = list(s.exec(base.order_by(Message.id).limit(head)))
        last = list(s.exec(base.order_by(Message.id.desc()).limit(tail)))
    return row, first + list(reversed(last)), total


def recent_sessions(
    db: Database, user_id: str, *, limit: int, exclude_session_id: str | None = None, oldest_first: bool = False
) -> list[SessionSummary]:
    """The user's sessions with messages, by last activity, each with its first user message as preview."""
    last = func.max(Message.created_at).label("last_active")
    query = (
        select(ChatSession, last, func.count(Message.id))
        .join(Message, Message.session_id == ChatSession.id)
        .where(ChatSession.user_id == user_id)
        .group_by(ChatSession.id)
        .order_by(last.asc() if oldest_first else last.desc())
        .limit(limit)
    )
    if exclude_session_id is not None:
        query = query.where(ChatSession.id != exclude_session_id)
    with db.read() as s:
        rows = list(s.exec(query))
        return [SessionSummary(row.id, row.title, row.source, row.created_at, active, count,
                               _preview(s, row.id)) for row, active, count in rows]


def _preview(s: Session, session_id: str) -> str:
    first = s.exec(
        _in_session(session_id, ("user",)).where(Message.content.is_not(None)).order_by(Message.id).limit(1)
    ).first()
    text = " ".join((first.content if first else "").split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"

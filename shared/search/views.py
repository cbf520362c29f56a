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
MIN_TITLE_QUERY = 3  # shorter queries would match too many titles by substring


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


@dataclass(frozen=True)
class Anchored:
    """Windows around a session's hits, merged in order, and the session's first and last messages
    outside them (bookends)."""

    messages: list[Message]
    bookend_start: list[Message]
    bookend_end: list[Message]
    before: int
    after: int


def anchored_view(db: Database, user_id: str, session_id: str, anchors: Sequence[int], window: int, bookend: int,
                  roles: Sequence[str]) -> Anchored:
    """`window` messages of these roles either side of each anchor (each shown once), and the first and
    last `bookend` messages with text that lie before and after all of them."""
    with db.read() as s:
        _owned(s, user_id, session_id)
        base = _in_session(session_id, roles)
        shown: dict[int, Message] = {}
        for anchor_id in anchors:
            anchor = s.get(Message, anchor_id)
            if anchor is None or anchor.session_id != session_id:
                raise NotFound(f"No message {anchor_id} in session {session_id!r}.", code="message_not_found")
            shown[anchor.id] = anchor
            for m in s.exec(base.where(Message.id < anchor_id).order_by(Message.id.desc()).limit(window)):
                shown[m.id] = m
            for m in s.exec(base.where(Message.id > anchor_id).order_by(Message.id).limit(window)):
                shown[m.id] = m
        first, last = min(shown), max(shown)
        spoken = _in_session(session_id, ("user", "assistant")).where(Message.content.is_not(None),
                                                                       Message.content != "")
        start = list(s.exec(spoken.where(Message.id < first).order_by(Message.id).limit(bookend)))
        end = list(s.exec(spoken.where(Message.id > last).order_by(Message.id.desc()).limit(bookend)))
        before = _count(s, session_id, roles, Message.id < first)
        after = _count(s, session_id, roles, Message.id > last)
    return Anchored([shown[i] for i in sorted(shown)], start, list(reversed(end)), before, after)


def titled_sessions(db: Database, user_id: str, query: str, *, limit: int,
                    exclude_session_id: str | None = None) -> list[ChatSession]:
    """The user's sessions whose title is the query (any case) first, then those whose title holds it."""
    wanted = " ".join(query.strip().strip("\"'`").split()).lower()
    if len(wanted) < MIN_TITLE_QUERY:
        return []
    title = func.lower(ChatSession.title)
    escaped = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query_ = select(ChatSession).where(ChatSession.user_id == user_id, ChatSession.title.is_not(None),
                                       title.like(f"%{escaped}%", escape="\\"))
    if exclude_session_id is not None:
        query_ = query_.where(ChatSession.id != exclude_session_id)
    with db.read() as s:
        rows = list(s.exec(query_.order_by(ChatSession.updated_at.desc()).limit(limit * 4)))
    rows.sort(key=lambda r: " ".join(r.title.split()).lower() != wanted)  # exact titles first, stable
    return rows[:limit]


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

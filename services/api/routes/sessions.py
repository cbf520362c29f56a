"""Sessions of the calling user and their transcripts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep, EnqueueDep
from services.api.schemas import SessionCreateBody, SessionUpdateBody, error_responses
from shared.models.base import MAX_DB_INT
from shared.models.sessions import MessagePage, MessagePublic, SessionPage, SessionPublic
from shared.queue.names import END_SESSION
from shared.queue.payloads import EndSession
from shared.stores import attachments, sessions

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=error_responses(401, 422))


def _public(row) -> SessionPublic:
    return SessionPublic.model_validate(row, from_attributes=True)


@router.post("", status_code=201, response_model=SessionPublic)
def create_session(body: SessionCreateBody, db: DbDep, user: CurrentUser) -> SessionPublic:
    """Start a session; its system prompt is frozen when its first turn runs."""
    row = sessions.create_session(db, user.id, title=body.title, instructions=body.instructions)
    return _public(row)


@router.get("", response_model=SessionPage)
def list_sessions(
    db: DbDep,
    user: CurrentUser,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> SessionPage:
    """Newest first; pass `next_cursor` back as `cursor` for the next page."""
    rows, next_cursor = sessions.list_sessions(db, user.id, cursor=cursor, limit=limit)
    return SessionPage(data=[_public(r) for r in rows], next_cursor=next_cursor)


@router.post("/{session_id}/end", status_code=202, response_model=SessionPublic, responses=error_responses(404))
def end_session(session_id: str, db: DbDep, user: CurrentUser, enqueue: EnqueueDep) -> SessionPublic:
    """The client is done with the session (its /new): the memory provider hears it once, in the background."""
    row = sessions.get_session(db, user.id, session_id)
    if row.ended_at is None:
        enqueue(END_SESSION, EndSession(session_id=row.id))
    return _public(row)


@router.get("/{session_id}", response_model=SessionPublic, responses=error_responses(404))
def read_session(session_id: str, db: DbDep, user: CurrentUser) -> SessionPublic:
    """One session, with the sha256 of its frozen system prompt."""
    return _public(sessions.get_session(db, user.id, session_id))


@router.patch("/{session_id}", response_model=SessionPublic, responses=error_responses(404))
def update_session(session_id: str, body: SessionUpdateBody, db: DbDep, user: CurrentUser) -> SessionPublic:
    """Retitle a session; an automatic title never replaces yours."""
    return _public(sessions.set_title(db, user.id, session_id, body.title))


@router.get("/{session_id}/messages", response_model=MessagePage, responses=error_responses(404))
def list_messages(
    session_id: str,
    db: DbDep,
    user: CurrentUser,
    after: Annotated[int | None, Query(ge=0, le=MAX_DB_INT)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> MessagePage:
    """The transcript in order; pass `next_after` back as `after` for the next page."""
    sessions.get_session(db, user.id, session_id)
    rows = sessions.list_messages(db, session_id, after=after, limit=limit + 1)
    page = rows[:limit]
    next_after = page[-1].id if len(rows) > limit else None
    files = attachments.for_messages(db, [m.id for m in page if m.role == "user"])
    data = [MessagePublic.model_validate(m, from_attributes=True) for m in page]
    for message in data:
        message.attachments = [f.id for f in files.get(message.id, [])]
    return MessagePage(data=data, next_after=next_after)

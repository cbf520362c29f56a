"""Attachments: the rows of files users sent; the bytes are written by shared/media/inbox.py first.

Every read takes the user id and answers NotFound for another user's attachment, so an id never tells one
user anything about another's files.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import Session, select

from shared.db import Database
from shared.errors import Conflict, InvalidInput, NotFound
from shared.ids import new_id
from shared.models.attachments import MAX_PER_TURN, Attachment
from shared.models.sessions import Message


def add_attachment(db: Database, *, user_id: str, session_id: str, kind: str, filename: str, mime: str,
                   size: int, path: str, sha256: str) -> Attachment:
    """Record a file already written to the user's workspace."""
    row = Attachment(id=new_id("att"), user_id=user_id, session_id=session_id, kind=kind, filename=filename,
                     mime=mime, size=size, path=path, sha256=sha256)
    with db.write() as s:
        s.add(row)
    return row


def add_bound(s: Session, user_id: str, session_id: str, turn_id: str, files: list[dict]) -> None:
    """Inside the accepting transaction: record files already written for this turn (the OpenAI endpoint's
    images); each dict holds kind, filename, mime, size, path and sha256."""
    for f in files:
        s.add(Attachment(id=new_id("att"), user_id=user_id, session_id=session_id, turn_id=turn_id, **f))


def get_attachment(db: Database, user_id: str | None, attachment_id: str) -> Attachment:
    """An attachment of this user (any user's when user_id is None); another user's is NotFound."""
    with db.read() as s:
        row = s.get(Attachment, attachment_id)
    if row is None or (user_id is not None and row.user_id != user_id):
        raise NotFound("No such attachment.", code="attachment_not_found")
    return row


def check_ids(ids: list[str]) -> list[str]:
    """The ids a turn names, without repeats; more than MAX_PER_TURN is refused."""
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_PER_TURN:
        raise InvalidInput(f"A turn takes at most {MAX_PER_TURN} attachments.")
    return unique


def bind_to_turn(s: Session, user_id: str, session_id: str, turn_id: str, ids: list[str]) -> None:
    """Inside the accepting transaction: mark the user's attachments as carried by this turn.

    Another user's id, or one of another session, is NotFound (the turn is rolled back with it); one
    already carried by an earlier turn is a Conflict (its message already refers to it)."""
    if not ids:
        return
    rows = s.exec(select(Attachment).where(Attachment.id.in_(ids))).all()
    found = {row.id: row for row in rows if row.user_id == user_id and row.session_id == session_id}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"No such attachment in this session: {missing[0][:60]}.", code="attachment_not_found")
    taken = [row.id for row in found.values() if row.turn_id not in (None, turn_id)]
    if taken:
        raise Conflict(f"Attachment {taken[0]} was already sent with another turn; upload the file again.",
                       code="attachment_in_use")
    s.execute(update(Attachment).where(Attachment.id.in_(ids)).values(turn_id=turn_id))


def for_turn(db: Database, turn_id: str) -> list[Attachment]:
    """The attachments a turn carries, in upload order."""
    with db.read() as s:
        return list(s.exec(select(Attachment).where(Attachment.turn_id == turn_id)
                           .order_by(Attachment.created_at, Attachment.id)).all())


def link_message(db: Database, turn_id: str, message_id: int) -> None:
    """The stored user message of the turn refers to the turn's attachments."""
    with db.write() as s:
        s.execute(update(Attachment).where(Attachment.turn_id == turn_id, Attachment.message_id.is_(None))
                  .values(message_id=message_id))


def set_transcript(db: Database, attachment_id: str, transcript: str) -> None:
    with db.write() as s:
        s.execute(update(Attachment).where(Attachment.id == attachment_id).values(transcript=transcript))


def for_messages(db: Database, message_ids: list[int]) -> dict[int, list[Attachment]]:
    """The attachments each of these messages refers to (how a transcript shows them)."""
    if not message_ids:
        return {}
    with db.read() as s:
        rows = s.exec(select(Attachment).where(Attachment.message_id.in_(message_ids))
                      .order_by(Attachment.created_at, Attachment.id)).all()
    out: dict[int, list[Attachment]] = {}
    for row in rows:
        out.setdefault(row.message_id, []).append(row)
    return out


def set_message_text(db: Database, message_id: int, content: str) -> None:
    """Rewrite a user message's stored text (a voice note's transcript): the search index follows its trigger."""
    with db.write() as s:
        s.execute(update(Message).where(Message.id == message_id).values(content=content))

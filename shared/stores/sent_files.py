"""Files the agent sends to its chat (send_file): an outbound attachment and the outbox item that carries it,
written in one transaction, so a file is never registered without its delivery nor delivered unregistered.

A turn sends a given file (same path, same bytes) to its chat once: a tool call run again after a worker was
killed finds the item already recorded and answers with it instead of queuing a second copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import select

from shared.db import Database
from shared.ids import new_id
from shared.models.attachments import Attachment
from shared.models.gateway import OutboxItem


@dataclass(frozen=True)
class SentFile:
    """What send_file recorded (or had recorded already, `new` False)."""

    attachment: Attachment
    item: OutboxItem
    new: bool


def send(db: Database, *, user_id: str, session_id: str, turn_id: str, target: str, chat_id: str, caption: str,
         kind: str, filename: str, mime: str, size: int, path: str, sha256: str) -> SentFile:
    """Register the workspace file as the session's outbound attachment and queue it for the chat."""
    with db.write() as s:
        query = (select(OutboxItem, Attachment).join(Attachment, Attachment.id == OutboxItem.attachment_id)
                 .where(OutboxItem.turn_id == turn_id, OutboxItem.target == target, Attachment.path == path,
                        Attachment.sha256 == sha256, Attachment.user_id == user_id))
        found = s.exec(query).first()
        if found is not None:
            return SentFile(found[1], found[0], False)
        attachment = Attachment(id=new_id("att"), user_id=user_id, session_id=session_id, kind=kind,
                                filename=filename, mime=mime, size=size, path=path, sha256=sha256)
        item = OutboxItem(id=new_id("out"), user_id=user_id, target=target, chat_id=chat_id, turn_id=turn_id,
                          text=caption, attachment_id=attachment.id)
        s.add(attachment)
        s.flush()
        s.add(item)
    return SentFile(attachment, item, True)


def sent_in_session(db: Database, user_id: str, session_id: str) -> list[tuple[Attachment, OutboxItem]]:
    """The files the agent sent in this session of the user, oldest first, with their delivery."""
    with db.read() as s:
        rows = s.exec(select(Attachment, OutboxItem).join(OutboxItem, OutboxItem.attachment_id == Attachment.id)
                      .where(Attachment.user_id == user_id, Attachment.session_id == session_id)
                      .order_by(OutboxItem.created_at, OutboxItem.id)).all()
    return [(a, o) for a, o in rows]

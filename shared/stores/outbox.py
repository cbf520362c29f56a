"""The gateway's delivery outbox: every reply is recorded before it is sent, then retried until sent or failed.

A reply to a turn is recorded when the turn starts, without text; the text is filled in once the turn ends
(by the gateway that ran it, or after a restart by the outbox loop that finds the turn finished)."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from shared.backoff import exponential
from shared.clock import utcnow
from shared.db import Database
from shared.errors import NotFound
from shared.ids import new_id
from shared.models.gateway import OutboxItem

MAX_ATTEMPTS = 8
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0


def record(db: Database, user_id: str, target: str, chat_id: str, turn_id: str | None,
           text: str | None) -> OutboxItem:
    row = OutboxItem(id=new_id("out"), user_id=user_id, target=target, chat_id=chat_id, turn_id=turn_id, text=text)
    with db.write() as s:
        s.add(row)
    return row


def due(db: Database, limit: int = 50) -> list[OutboxItem]:
    """Pending items with their text whose next attempt is now or past, oldest first."""
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.status == "pending", OutboxItem.text.is_not(None),
                                                    OutboxItem.next_attempt_at <= utcnow())
                           .order_by(OutboxItem.created_at).limit(limit)))


def awaiting(db: Database, limit: int = 100) -> list[OutboxItem]:
    """Pending replies whose turn had not ended when last seen (no text yet), oldest first."""
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.status == "pending", OutboxItem.text.is_(None))
                           .order_by(OutboxItem.created_at).limit(limit)))


def fill(db: Database, item_id: str, text: str) -> OutboxItem:
    """The finished turn's reply, set once (a second fill keeps the first text: the same reply, never two)."""
    with db.write() as s:
        row = s.get(OutboxItem, item_id, with_for_update=True)
        if row is None:
            raise NotFound("No such outbox item.", code="outbox_not_found")
        if row.text is None and row.status == "pending":
            row.text, row.next_attempt_at = text, utcnow()
            s.add(row)
    return row


def report(db: Database, item_id: str, ok: bool, error: str | None, retry_in: float | None,
           give_up: bool = False, *, backoff_base: float = BACKOFF_BASE_SECONDS,
           backoff_max: float = BACKOFF_MAX_SECONDS) -> OutboxItem:
    """Record one attempt: sent, or retried after backoff (`retry_in` when the platform named one), or failed
    for good after MAX_ATTEMPTS (at once with `give_up`). The backoff is base, 2x base, ... capped at max
    (OUTBOX_BACKOFF_* settings: tests shorten it so a callback that is down a while costs them no wall time)."""
    now = utcnow()
    with db.write() as s:
        row = s.get(OutboxItem, item_id, with_for_update=True)
        if row is None:
            raise NotFound("No such outbox item.", code="outbox_not_found")
        if row.status != "pending":
            return row
        row.attempts += 1
        if ok:
            row.status, row.sent_at, row.last_error = "sent", now, None
        else:
            row.last_error = (error or "delivery failed")[:500]
            if give_up or row.attempts >= MAX_ATTEMPTS:
                row.status = "failed"
            else:
                delay = retry_in if retry_in is not None else exponential(row.attempts, backoff_base, backoff_max)
                row.next_attempt_at = now + timedelta(seconds=delay)
        s.add(row)
    return row


def by_status(db: Database, status: str, limit: int = 100) -> list[OutboxItem]:
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.status == status)
                           .order_by(OutboxItem.created_at.desc()).limit(limit)))

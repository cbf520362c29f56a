"""Which session a chat continues: one long session per session key, until `/new`."""

from __future__ import annotations

from sqlmodel import select

from shared.clock import utcnow
from shared.db import Database
from shared.models.gateway import GatewayChat
from shared.models.sessions import ChatSession
from shared.stores import sessions

GATEWAY_SOURCE = "gateway"  # the source of a session a chat platform's messages continue


def resolve(db: Database, user_id: str, key: str, *, fresh: bool = False, source: str = GATEWAY_SOURCE
            ) -> tuple[GatewayChat, bool, str | None]:
    """The chat's current session for this user (created when missing, or anew when `fresh`); True if new; and
    the session `fresh` replaced (it has really ended), if any.

    The key is scoped by user: a key another user holds is answered as missing, never shown.
    """
    scoped = f"{user_id}|{key}"[:255]
    with db.read() as s:
        row = s.get(GatewayChat, scoped)
    if row is not None and not fresh:
        return row, False, None
    session = sessions.create_session(db, user_id, title=key[:200], source=source)
    with db.write() as s:
        row = s.get(GatewayChat, scoped, with_for_update=True)
        if row is not None and not fresh:
            return row, False, None  # another request bound it first; the spare session stays empty
        replaced = row.session_id if row is not None else None
        row = row or GatewayChat(key=scoped, user_id=user_id, session_id=session.id)
        row.session_id, row.updated_at = session.id, utcnow()
        s.add(row)
    return row, True, replaced


def sessions_of(db: Database, user_id: str) -> list[ChatSession]:
    with db.read() as s:
        return list(s.exec(select(ChatSession).join(GatewayChat, GatewayChat.session_id == ChatSession.id)
                           .where(GatewayChat.user_id == user_id)))


def chat_target(db: Database, session_id: str) -> tuple[str, str] | None:
    """(outbox target, chat id) of the chat this session talks to — `("telegram:<chat>", "<chat>")` — or None
    for a session no chat continues (plain API sessions, the OpenAI endpoint, cron jobs, webhooks).

    Only a session of source GATEWAY_SOURCE has one (`resolve` makes them); a caller holding the session row can
    skip this read for any other."""
    with db.read() as s:
        row = s.exec(select(GatewayChat).where(GatewayChat.session_id == session_id)).first()
    parts = row.key.split("|", 1)[-1].split(":") if row is not None else []
    if len(parts) >= 5 and parts[2] == "telegram" and parts[4].lstrip("-").isdigit():
        return f"telegram:{parts[4]}", parts[4]
    return None

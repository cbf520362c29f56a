"""Conversations of OpenAI-compatible clients: one stored session per conversation, whatever the client resends.

Clients such as Open WebUI resend the whole history on every request and name no session. As the
anchor does, the conversation is known by a hash of its system prompt and first user message (here
also scoped to the calling user). A resent history the session already holds adds only what is new;
a history that no longer matches (an edited or regenerated message) forks a new session, so the old
one is never rewritten. The session, any new history and the turn are committed in one transaction.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from shared.db import Database
from shared.ids import new_id
from shared.models.sessions import ChatSession, Message
from shared.models.turns import Turn
from shared.stores import attachments
from shared.stores.sessions import insert_messages
from shared.stores.turn_slots import lock_user
from shared.stores.turns import add_turn, idempotent_turn, lost_race, same_request

SOURCE = "chat_completions"
VISIBLE_ROLES = ("user", "assistant")
CANDIDATES = 20  # forks of one conversation compared, newest first

Line = tuple[str, str]


def conversation_key(user_id: str, instructions: str | None, first_user_text: str) -> str:
    """sha256 of the user, the system prompt and the first user message: the conversation's stable name."""
    return hashlib.sha256(f"{user_id}\n{instructions or ''}\n{first_user_text}".encode()).hexdigest()


def visible(messages: Iterable[dict[str, Any]]) -> list[Line]:
    """What a chat client shows of a history: user messages and assistant messages with text, stripped."""
    lines = []
    for message in messages:
        text = (message.get("content") or "").strip()
        if message.get("role") in VISIBLE_ROLES and text:
            lines.append((message["role"], text))
    return lines


def accept_conversation_turn(
    db: Database,
    user_id: str,
    *,
    instructions: str | None,
    history: list[dict[str, Any]],
    text: str,
    key: str,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    max_running: int | None = None,
    files: list[dict] | None = None,
) -> tuple[Turn, list[Turn]]:
    """The turn of `text` in the session holding `history` (created or forked when none does), and the turns to send.

    `files`: images already written to the user's inbox, recorded as the turn's attachments in the same transaction."""
    try:
        with db.write() as s:
            if idempotency_key:
                existing = idempotent_turn(s, user_id, idempotency_key)
                if existing is not None:
                    return same_request(existing, request_hash), []
            lock_user(s, user_id)  # two requests of one conversation must not both create its session
            session_id, new_history = _holder(s, user_id, key, history)
            if session_id is None:
                session_id = _create(s, user_id, key, instructions)
            if new_history:
                insert_messages(s, session_id, new_history)
            turn, sent = add_turn(s, user_id, session_id, text, idempotency_key=idempotency_key,
                                  request_hash=request_hash, max_running=max_running,
                                  interactive=False)  # an OpenAI client has no channel for an approval question
            attachments.add_bound(s, user_id, session_id, turn.id, files or [])
            return turn, sent
    except IntegrityError:
        return lost_race(db, user_id, idempotency_key, request_hash), []


def _create(s: Session, user_id: str, key: str, instructions: str | None) -> str:
    row = ChatSession(id=new_id("ses"), user_id=user_id, source=SOURCE, instructions=instructions,
                      conversation_key=key)
    s.add(row)
    s.flush()
    return row.id


def _holder(s: Session, user_id: str, key: str, history: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The newest session of this conversation whose transcript the history continues, and the messages it lacks.

    No such session (a first request, or a history that diverged from every fork): (None, the whole history).
    """
    wanted = visible(history)
    if wanted:
        query = (select(ChatSession.id)
                 .where(ChatSession.user_id == user_id, ChatSession.conversation_key == key)
                 .order_by(ChatSession.updated_at.desc(), ChatSession.created_at.desc()).limit(CANDIDATES))
        for session_id in s.exec(query):
            held = session_lines(s, session_id)
            if held and wanted[:len(held)] == held:
                return session_id, _after(history, len(held))
    return None, history


def _after(history: list[dict[str, Any]], shown: int) -> list[dict[str, Any]]:
    """The messages after the `shown`-th visible one (tool messages in between go with the new part)."""
    seen = 0
    for index, message in enumerate(history):
        if visible([message]):
            seen += 1
            if seen == shown:
                return history[index + 1:]
    return []


def session_lines(s: Session, session_id: str) -> list[Line]:
    """The session as its client saw it: seeded history as stored, then each turn's input and answer."""
    seeded = s.exec(select(Message.id, Message.role, Message.content)
                    .where(Message.session_id == session_id, Message.turn_id.is_(None),
                           Message.role.in_(VISIBLE_ROLES))).all()
    first_rows = dict(s.exec(select(Message.turn_id, func.min(Message.id))
                             .where(Message.session_id == session_id, Message.turn_id.is_not(None))
                             .group_by(Message.turn_id)).all())
    turns = s.exec(select(Turn.id, Turn.seq, Turn.input, Turn.output)
                   .where(Turn.session_id == session_id).order_by(Turn.seq)).all()
    unclaimed = float("inf")  # a queued turn has no rows yet: it comes after everything stored
    ordered: list[tuple[float, int, list[Line]]] = [
        (row.id, 0, visible([{"role": row.role, "content": row.content}])) for row in seeded]
    for turn in turns:
        lines = visible([{"role": "user", "content": turn.input}, {"role": "assistant", "content": turn.output}])
        ordered.append((first_rows.get(turn.id, unclaimed), turn.seq, lines))
    ordered.sort(key=lambda item: (item[0], item[1]))
    return [line for _, _, lines in ordered for line in lines]

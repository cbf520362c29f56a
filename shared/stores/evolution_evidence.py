"""Read the evidence a skill evolution learns from: the user's sessions that loaded the skill, as transcripts.

A session counts when one of its assistant messages called `skill_view` for the skill (its index entry led
the model to load it). Only the newest `limit` such sessions are read, each cut to a bounded excerpt, so a
run's prompt size does not grow with a user's history. Reads only; nothing here writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import String, cast
from sqlmodel import select

from shared.db import Database
from shared.models.sessions import ChatSession, Message

EXCERPT_CHARS = 4_000
MESSAGE_CHARS = 600
SCAN_LIMIT = 2_000  # candidate tool-call messages examined at most per run


@dataclass(frozen=True)
class SessionLine:
    """One message of a session as evidence: who spoke and what, tool calls named."""

    role: str
    text: str


@dataclass(frozen=True)
class SkillSession:
    """A session that loaded the skill: its id and its messages from the first load on."""

    session_id: str
    lines: tuple[SessionLine, ...]


def _loads(calls: list | None, skill: str) -> bool:
    """Whether these tool calls include skill_view of this skill."""
    for call in calls or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or function.get("name") != "skill_view":
            continue
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            continue
        if isinstance(arguments, dict) and arguments.get("name") == skill:
            return True
    return False


def sessions_loading(db: Database, user_id: str, skill: str, limit: int) -> list[str]:
    """Ids of this user's sessions that loaded `skill`, newest first, at most `limit`."""
    query = (select(Message.session_id, Message.tool_calls)
             .join(ChatSession, ChatSession.id == Message.session_id)
             .where(ChatSession.user_id == user_id, Message.role == "assistant", Message.tool_calls.is_not(None),
                    cast(Message.tool_calls, String).contains(skill))
             .order_by(Message.id.desc()).limit(SCAN_LIMIT))
    found: list[str] = []
    with db.read() as s:
        for session_id, calls in s.exec(query):
            if session_id not in found and _loads(calls, skill):
                found.append(session_id)
                if len(found) >= limit:
                    break
    return found


def transcript(db: Database, session_id: str, skill: str) -> SkillSession:
    """The user's ask that led to the first load of the skill and everything after it, each message cut, bounded."""
    query = select(Message).where(Message.session_id == session_id).order_by(Message.id)
    lines: list[SessionLine] = []
    ask: SessionLine | None = None
    used = 0
    with db.read() as s:
        for message in s.exec(query):
            text = _text(message)[:MESSAGE_CHARS]
            if not lines and not (message.role == "assistant" and _loads(message.tool_calls, skill)):
                ask = SessionLine("user", text) if message.role == "user" and text else ask
                continue
            if not lines and ask is not None:
                lines.append(ask)
                used += len(ask.text)
            if used + len(text) > EXCERPT_CHARS:
                break
            used += len(text)
            lines.append(SessionLine(message.role, text))
    return SkillSession(session_id, tuple(lines))


def _text(message: Message) -> str:
    if message.role == "assistant" and message.tool_calls:
        names = ", ".join(str((c.get("function") or {}).get("name")) for c in message.tool_calls if isinstance(c, dict))
        return f"{message.content or ''} [called: {names}]".strip()
    if message.role == "tool":
        return f"[{message.name or 'tool'} result] {message.content or ''}"
    return message.content or ""


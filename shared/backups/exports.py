"""A session taken away: its transcript as JSON, Markdown or a self-contained HTML page."""

from __future__ import annotations

import html
import json
from typing import Any, Iterator

from shared.db import Database
from shared.models.sessions import ChatSession, MessagePublic, SessionPublic
from shared.stores import sessions

FORMATS = {"json": "application/json", "md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8"}
PAGE = 1000  # messages read per transaction


def transcript(db: Database, session: ChatSession) -> dict[str, Any]:
    """The session and all its messages, as the API shows them."""
    return {"session": SessionPublic.model_validate(session, from_attributes=True).model_dump(mode="json"),
            "messages": [m.model_dump(mode="json") for m in _messages(db, session.id)]}


def render(data: dict[str, Any], fmt: str) -> str:
    """The transcript in `fmt` (one of FORMATS)."""
    if fmt == "json":
        return json.dumps(data, ensure_ascii=False, indent=2)
    if fmt == "md":
        return _markdown(data)
    return _html(data)


def _messages(db: Database, session_id: str) -> Iterator[MessagePublic]:
    after = None
    while True:
        rows = sessions.list_messages(db, session_id, after=after, limit=PAGE)
        for row in rows:
            yield MessagePublic.model_validate(row, from_attributes=True)
        if len(rows) < PAGE:
            return
        after = rows[-1].id


def _title(session: dict[str, Any]) -> str:
    return session["title"] or f"Session {session['id']}"


def _calls(message: dict[str, Any]) -> list[str]:
    """Each tool call of a message as `name(arguments)`."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(f"{function.get('name', '?')}({function.get('arguments', '')})")
    return calls


def _speaker(message: dict[str, Any]) -> str:
    return f"{message['role']} · {message['name']}" if message.get("name") else message["role"]


def _markdown(data: dict[str, Any]) -> str:
    session = data["session"]
    lines = [f"# {_title(session)}", "", f"Session `{session['id']}`, started {session['created_at']}.", ""]
    for message in data["messages"]:
        lines += [f"## {_speaker(message)} — {message['created_at']}", ""]
        if message.get("content"):
            lines += [message["content"], ""]
        lines += [f"- tool call: `{call}`" for call in _calls(message)]
        if message.get("tool_calls"):
            lines.append("")
    return "\n".join(lines)


def _html(data: dict[str, Any]) -> str:
    session = data["session"]
    esc = html.escape
    parts = ["<!doctype html>", '<html><head><meta charset="utf-8">', f"<title>{esc(_title(session))}</title>",
             "<style>body{font-family:sans-serif;max-width:50em;margin:auto}pre{white-space:pre-wrap}"
             ".role{color:#555;font-size:.9em}</style></head><body>",
             f"<h1>{esc(_title(session))}</h1>",
             f"<p>Session <code>{esc(session['id'])}</code>, started {esc(session['created_at'])}.</p>"]
    for message in data["messages"]:
        parts.append(f'<section class="{esc(message["role"])}"><p class="role">{esc(_speaker(message))} — '
                     f"{esc(message['created_at'])}</p>")
        if message.get("content"):
            parts.append(f"<pre>{esc(message['content'])}</pre>")
        parts += [f"<p>tool call: <code>{esc(call)}</code></p>" for call in _calls(message)]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)

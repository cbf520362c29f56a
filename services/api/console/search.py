"""Search: one box over the user's past conversations, through the store /v1/search reads.

Each hit shows its session's title and the message around the first word that matched; a click opens
the session at that message (`/chat/<session>#m-<message id>`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request

from services.api.console.deps import ConsoleUser
from services.api.console.render import render
from services.api.console.session import Flash
from shared.errors import InvalidInput
from shared.stores import sessions
from shared.search.engine import search_messages
from shared.search.query import MAX_QUERY_CHARS

router = APIRouter(include_in_schema=False)

LIMIT = 20
CONTEXT_CHARS = 140
WORD = re.compile(r"\w{2,}", re.UNICODE)


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    title: str
    role: str
    created_at: object
    before: str
    match: str
    after: str


def excerpt(content: str, query: str) -> tuple[str, str, str]:
    """(text before, the first matched word, text after), trimmed to CONTEXT_CHARS either side."""
    lowered = content.lower()
    spans = [(lowered.find(w.lower()), len(w)) for w in WORD.findall(query)]
    spans = [s for s in spans if s[0] >= 0]
    if not spans:
        return ("", "", content[:2 * CONTEXT_CHARS] + ("…" if len(content) > 2 * CONTEXT_CHARS else ""))
    start, size = min(spans)
    left = max(0, start - CONTEXT_CHARS)
    right = min(len(content), start + size + CONTEXT_CHARS)
    return (("…" if left else "") + content[left:start], content[start:start + size],
            content[start + size:right] + ("…" if right < len(content) else ""))


def _titles(db, user_id: str, session_ids: set[str]) -> dict[str, str]:
    found = sessions.session_titles(db, user_id, session_ids)
    return {session_id: found.get(session_id) or "Untitled chat" for session_id in session_ids}


@router.get("/search")
def search_page(request: Request, user: ConsoleUser,
                q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = ""):
    db = request.app.state.db
    try:
        hits = search_messages(db, user.id, q, limit=LIMIT) if q.strip() else []
    except InvalidInput as exc:
        return render(request, "search.html", status_code=422, active="search", q=q, hits=[],
                      flash=Flash(exc.message, "alert"))
    titles = _titles(db, user.id, {h.session_id for h in hits})
    shown = [Hit(h.message_id, h.session_id, titles[h.session_id], h.role, h.created_at, *excerpt(h.content, q))
             for h in hits]
    return render(request, "search.html", active="search", q=q, hits=shown)

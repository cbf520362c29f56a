"""`session_search`: the agent reads its earlier conversations with this user, straight from the store.

Four shapes, inferred from the arguments (Hermes Agent's order): scroll (`session_id` +
`around_message_id`), discover (`query`: ranked hits grouped by session, a few messages around each),
read (`session_id` alone: the session's head and tail) and browse (nothing: recent sessions). It
returns stored messages with their ids, roles and times, never a summary, and calls no model.
"""

from __future__ import annotations

from typing import Any

from shared.db import get_database
from shared.errors import InvalidInput
from shared.models.sessions import Message
from shared.stores import sessions
from shared.search.engine import SEARCHABLE_ROLES, search_messages
from shared.search.query import MAX_QUERY_CHARS
from shared.search.views import (anchored_view, messages_around, recent_sessions, session_head_tail,
                                         titled_sessions)
from services.worker.tools.registry import Tool, ToolContext

LIMIT, MAX_LIMIT = 3, 10
WINDOW, MAX_WINDOW = 5, 20
CONTEXT = 5  # messages shown either side of a discovered match
BOOKEND = 3  # a discovered session's first and last messages shown besides the windows
WINDOWS_PER_SESSION = 3  # hits of one session shown with their windows (the others by id)
MAX_SHOWN = 80  # non-anchor messages one discover answer shows at most, across its sessions
DISCOVER_CHARS = 300  # a discovered message's text is cut here (scroll to read it whole)
HITS_PER_SESSION = 5  # hits fetched per session asked for, to fill `limit` distinct sessions
READ_HEAD, READ_TAIL = 20, 10
MATCH_CHARS, TEXT_CHARS = 2000, 600
ROLES = ("user", "assistant", "tool")


def session_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Dispatch to scroll, discover, read or browse."""
    db = get_database(ctx.settings.sqlalchemy_url)
    query = (args.get("query") or "")[:MAX_QUERY_CHARS].strip()  # the parser reads no more; the date scan neither
    session_id = (args.get("session_id") or "").strip() or None
    roles = _roles(args.get("role_filter"))
    sort = _sort(args.get("sort"))
    limit = _clamp(args.get("limit"), LIMIT, MAX_LIMIT)
    if session_id and args.get("around_message_id") is not None:
        window = _clamp(args.get("window"), WINDOW, MAX_WINDOW)
        return _scroll(db, ctx, session_id, int(args["around_message_id"]), window, roles)
    if query:
        return _discover(db, ctx, query, session_id, limit, sort, roles)
    if session_id:
        return _read(db, ctx, session_id, roles)
    return _browse(db, ctx, limit, sort)


def _clamp(value: Any, default: int, most: int) -> int:
    return default if value is None else max(1, min(int(value), most))


def _sort(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if value not in ("newest", "oldest"):
        raise InvalidInput("sort must be 'newest' or 'oldest'.")
    return value


def _roles(value: Any) -> tuple[str, ...] | None:
    """The roles named in a comma list; None when not given (each shape has its default)."""
    if not value:
        return None
    names = [n.strip().lower() for n in str(value).split(",") if n.strip()]
    unknown = [n for n in names if n not in ROLES]
    if unknown:
        raise InvalidInput(f"role_filter may name only {', '.join(ROLES)}; not {', '.join(unknown)}.")
    return tuple(names)


def _view(message: Message, *, anchor: int | None = None, cut: int = TEXT_CHARS) -> dict[str, Any]:
    """One stored message as the model sees it: id, role, time and text (cut when long, and said so)."""
    limit = MATCH_CHARS if message.id == anchor else cut
    text = message.content or ""
    if not text and message.tool_calls:
        text = "[called tools: " + ", ".join(c.get("function", {}).get("name", "?") for c in message.tool_calls) + "]"
    if len(text) > limit:
        text = text[:limit] + f" … [cut at {limit} of {len(text)} characters; scroll to this id to read it all]"
    view: dict[str, Any] = {"id": message.id, "role": message.role, "at": _when(message.created_at), "text": text}
    if message.role == "tool" and message.name:
        view["tool"] = message.name
    if message.id == anchor:
        view["match"] = True
    return view


def _when(moment) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _discover(db, ctx: ToolContext, query: str, session_id: str | None, limit: int, sort, roles) -> dict[str, Any]:
    searchable = [r for r in (roles or SEARCHABLE_ROLES) if r in SEARCHABLE_ROLES]
    if not searchable:
        raise InvalidInput("Only user and assistant messages are searchable; read or scroll a session to see tool results.")
    exclude = None if session_id else ctx.session_id
    hits = search_messages(
        db, ctx.user_id, query, limit=limit * HITS_PER_SESSION, session_id=session_id,
        exclude_session_id=exclude, role=searchable, sort=sort or "rank",
    )
    titled = [] if session_id else titled_sessions(db, ctx.user_id, query, limit=limit, exclude_session_id=exclude)
    groups: dict[str, list] = {row.id: [] for row in titled}  # a session the query names ranks first
    for hit in hits:
        if hit.session_id in groups or len(groups) < limit:
            groups.setdefault(hit.session_id, []).append(hit)
    budget = Budget(MAX_SHOWN)
    results = [_discovered(db, ctx, sid, group, roles or SEARCHABLE_ROLES, budget, sid in {r.id for r in titled})
               for sid, group in list(groups.items())[:limit]]
    envelope: dict[str, Any] = {"mode": "discover", "query": query, "count": len(results), "results": results}
    if not results:
        envelope["message"] = "No matching messages found."
    else:
        envelope["hint"] = "Scroll with session_id + around_message_id; read a session's start and end with session_id."
    return envelope


class Budget:
    """How many more messages a discover answer may show; anchors are always shown."""

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, messages: list[Message], keep: set[int]) -> list[Message]:
        return [m for m in messages if m.id in keep or self._spend()]

    def _spend(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def _discovered(db, ctx: ToolContext, session_id: str, group: list, roles, budget: Budget,
                by_title: bool) -> dict[str, Any]:
    chat = sessions.get_session(db, ctx.user_id, session_id)
    anchors = [h.message_id for h in group[:WINDOWS_PER_SESSION]]
    result: dict[str, Any] = {"session_id": session_id, "title": chat.title}
    if by_title:
        result["matched_role"] = "session_title"
    if not anchors:  # named by its title only: its start and end
        _, ends, total = session_head_tail(db, ctx.user_id, session_id, BOOKEND, BOOKEND, SEARCHABLE_ROLES)
        result.update(when=_when(chat.created_at), message_count=total,
                      messages=[_view(m, cut=DISCOVER_CHARS) for m in budget.take(ends, set())])
        return result
    view = anchored_view(db, ctx.user_id, session_id, anchors, CONTEXT, BOOKEND, roles)
    keep = set(anchors)
    result.update(
        when=_when(group[0].created_at),
        match_message_id=anchors[0],
        messages=[_view(m, anchor=m.id if m.id in keep else None, cut=DISCOVER_CHARS)
                  for m in budget.take(view.messages, keep)],
        messages_before=view.before,
        messages_after=view.after,
    )
    if view.bookend_start or view.bookend_end:
        result["bookend_start"] = [_view(m, cut=DISCOVER_CHARS) for m in budget.take(view.bookend_start, set())]
        result["bookend_end"] = [_view(m, cut=DISCOVER_CHARS) for m in budget.take(view.bookend_end, set())]
    if len(group) > 1:
        result["other_match_ids"] = [h.message_id for h in group[1:]]
    return result


def _scroll(db, ctx: ToolContext, session_id: str, around: int, window: int, roles) -> dict[str, Any]:
    view = messages_around(db, ctx.user_id, session_id, around, window, roles or SEARCHABLE_ROLES)
    return {
        "mode": "scroll",
        "session_id": session_id,
        "around_message_id": around,
        "messages": [_view(m, anchor=around) for m in view.messages],
        "messages_before": view.before,
        "messages_after": view.after,
    }


def _read(db, ctx: ToolContext, session_id: str, roles) -> dict[str, Any]:
    chat, messages, total = session_head_tail(db, ctx.user_id, session_id, READ_HEAD, READ_TAIL,
                                              roles or SEARCHABLE_ROLES)
    result: dict[str, Any] = {
        "mode": "read",
        "session_id": session_id,
        "title": chat.title,
        "started_at": _when(chat.created_at),
        "message_count": total,
        "messages": [_view(m) for m in messages],
    }
    if total > len(messages):
        result["truncated"] = True
        result["hint"] = (f"Showing the first {READ_HEAD} and last {READ_TAIL} of {total} messages; "
                          "scroll with around_message_id to read the middle.")
    return result


def _browse(db, ctx: ToolContext, limit: int, sort) -> dict[str, Any]:
    found = recent_sessions(db, ctx.user_id, limit=limit, exclude_session_id=ctx.session_id,
                            oldest_first=sort == "oldest")
    return {
        "mode": "browse",
        "count": len(found),
        "sessions": [
            {"session_id": s.id, "title": s.title, "source": s.source, "started_at": _when(s.started_at),
             "last_active": _when(s.last_active), "message_count": s.message_count, "preview": s.preview}
            for s in found
        ],
    }


SESSION_SEARCH = Tool(
    name="session_search",
    description=(
        "Search and read your earlier conversations with this user (stored messages, not summaries). "
        "With query: matches by session (title matches first), with the messages around each and each "
        "session's start and end. With session_id (and around_message_id): read or scroll that session. With "
        "nothing: recent sessions. Inspect a URL or file the user gave first: past talk is not evidence of it."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or a question; \"exact phrase\", prefix*, AND, OR, NOT work."},
            "limit": {"type": "integer", "description": "Sessions to return (1-10).", "default": LIMIT},
            "sort": {"type": "string", "enum": ["newest", "oldest"], "description": "Order by time instead of relevance."},
            "session_id": {"type": "string", "description": "Read, scroll or search within this session only."},
            "around_message_id": {"type": "integer", "description": "With session_id: scroll around this message."},
            "window": {"type": "integer", "description": "Messages either side when scrolling (1-20).", "default": WINDOW},
            "role_filter": {"type": "string", "description": "Comma list of roles: user, assistant, tool."},
        },
        "required": [],
    },
    handler=session_search,
    guidance=(
        "When the user refers to something from an earlier conversation, or you need a past detail, decision "
        "or preference, use session_search before saying you do not remember; quote what it returns.",
    ),
)

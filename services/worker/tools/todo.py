"""`todo`: the agent's plan list for this session — add items, update their status, read it back compactly.

The list lives beside the transcript (shared/stores/todos.py), so it survives context compression: the
compaction's summary carries it too (agent/compress.py), and a call with no items reads it whole.
"""

from __future__ import annotations

from typing import Any

from shared.db import get_database
from shared.errors import InvalidInput
from shared.models.todos import STATUSES
from shared.stores import todos
from services.worker.tools.registry import Tool, ToolContext

MAX_ITEMS = 50
MAX_CONTENT_CHARS = 300
MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}


def todo(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Read the plan (no items), replace it, or merge items into it by id; answers with the whole plan."""
    db = get_database(ctx.settings.sqlalchemy_url)
    current = todos.items(db, ctx.session_id)
    given = args.get("todos")
    if given is None:
        return rendered(current)
    if not isinstance(given, list):
        raise InvalidInput("todos must be a list of {id, content, status} items.")
    changed = [_item(raw, current) for raw in given]
    merged = _merged(current, changed) if args.get("merge") else changed
    if len(merged) > MAX_ITEMS:
        raise InvalidInput(f"The plan holds at most {MAX_ITEMS} items.")
    return rendered(todos.replace(db, ctx.session_id, merged))


def rendered(items: list[dict[str, Any]]) -> str:
    """The plan as the model (and the console) reads it: one line per item, its status as a mark."""
    if not items:
        return "The plan is empty."
    done = sum(1 for i in items if i["status"] == "completed")
    lines = [f"{MARKS[i['status']]} {i['id']}. {i['content']}" for i in items]
    return f"Plan ({done}/{len(items)} done):\n" + "\n".join(lines)


def _item(raw: Any, current: list[dict[str, Any]]) -> dict[str, str]:
    if not isinstance(raw, dict) or not str(raw.get("id") or "").strip():
        raise InvalidInput("Each todo item needs an id.")
    known = next((i for i in current if i["id"] == str(raw["id"]).strip()), {})
    content = " ".join(str(raw.get("content") or known.get("content") or "").split())
    status = str(raw.get("status") or known.get("status") or "pending")
    if not content or len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"Each todo item needs content of at most {MAX_CONTENT_CHARS} characters.")
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}.")
    return {"id": str(raw["id"]).strip()[:20], "content": content, "status": status}


def _merged(current: list[dict[str, Any]], changed: list[dict[str, str]]) -> list[dict[str, Any]]:
    """`current` with items of the same id replaced in place, and new ids added at the end."""
    by_id = {item["id"]: item for item in changed}
    kept = [by_id.pop(item["id"], item) for item in current]
    return kept + list(by_id.values())


TODO = Tool(
    name="todo",
    description="Session plan: todos [{id, content, status: pending|in_progress|completed|cancelled}] replaces it, "
                "merge updates by id, none reads it.",
    parameters={"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "object"}},
        "merge": {"type": "boolean"},
    }, "required": []},
    handler=todo,
)

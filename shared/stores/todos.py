"""A session's plan list (`todo`): read whole, written whole."""

from __future__ import annotations

from typing import Any

from shared.clock import utcnow
from shared.db import Database
from shared.models.todos import SessionTodo


def items(db: Database, session_id: str) -> list[dict[str, Any]]:
    """The session's plan items in order ([] when it has none)."""
    with db.read() as s:
        row = s.get(SessionTodo, session_id)
    return list(row.items) if row is not None else []


def replace(db: Database, session_id: str, new_items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Store the session's whole plan list."""
    with db.write() as s:
        row = s.get(SessionTodo, session_id) or SessionTodo(session_id=session_id, updated_at=utcnow())
        row.items, row.updated_at = list(new_items), utcnow()
        s.add(row)
    return list(new_items)

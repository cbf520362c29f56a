"""Helpers for worker tests: posting turns, waiting on real signals, reading event streams."""

from __future__ import annotations


import redis

from shared.messaging import events
from shared.db import Database
from shared.models.turns import Turn
from shared.stores import turns
from services.worker.tools.registry import Tool
from tests.support.waiting import wait_until

TERMINAL = {"completed", "failed", "cancelled"}


def post_turn(db: Database, user_id: str, session_id: str, text: str) -> Turn:
    """Accept a turn the way the api does (committed, status queued)."""
    turn, _ = turns.create_turn(db, user_id, session_id, text)
    return turn


def wait_finished(db: Database, turn_id: str, timeout: float = 10.0) -> Turn:
    """The turn once it reached a terminal status."""
    return wait_until(lambda: _terminal(db, turn_id), timeout, what=f"turn {turn_id} to finish")


def _terminal(db: Database, turn_id: str) -> Turn | None:
    turn = turns.get_turn(db, None, turn_id)
    return turn if turn.status in TERMINAL else None


def stream(r: redis.Redis, turn_id: str) -> list[tuple[str, dict]]:
    """Every event of a turn's stream as (type, data), oldest first."""
    return [events.decode(entry_id, fields)[1:] for entry_id, fields in r.xrange(events.stream_key(turn_id))]


def event_types(r: redis.Redis, turn_id: str) -> list[str]:
    return [kind for kind, _ in stream(r, turn_id)]


def tool(name: str, handler, *, read_only: bool = False, properties: dict | None = None,
         path_arg: str | None = None, exclusive: bool = False) -> Tool:
    """A test tool with a permissive object schema."""
    schema = {"type": "object", "properties": properties or {}, "required": []}
    return Tool(name=name, description=f"test tool {name}", parameters=schema, handler=handler, read_only=read_only,
                toolset="tests", path_arg=path_arg, exclusive=exclusive)

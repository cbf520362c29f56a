"""The provider's embeddings of messages (`message_embeddings`): which messages lack one, and storing them.

A message "lacks" an embedding when it has none of the configured model (a row of another model or width
is replaced, so changing EMBEDDINGS_MODEL re-embeds on the next backfill). shared/search/embeddings.py asks
the provider; this store commits what it answered.
"""

from __future__ import annotations

import json
from typing import Sequence

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from shared.db import Database
from shared.models.search import MessageEmbedding

_SEARCHABLE = "m.role IN ('user', 'assistant') AND trim(coalesce(m.content, '')) <> ''"
_LACKING = "(e.message_id IS NULL OR e.model <> :model)"

_LACKING_MESSAGES = f"""
FROM messages AS m
LEFT JOIN message_embeddings AS e ON e.message_id = m.id
WHERE {_SEARCHABLE} AND {_LACKING}
"""
_OF_SESSION = f"SELECT m.id, m.content {_LACKING_MESSAGES} AND m.session_id = :session ORDER BY m.id LIMIT :limit"
_AFTER = f"SELECT m.id, m.content {_LACKING_MESSAGES} AND m.id > :after ORDER BY m.id LIMIT :limit"
_COUNT = f"SELECT count(*) {_LACKING_MESSAGES}"


def missing_in_session(db: Database, session_id: str, model: str, limit: int) -> list[tuple[int, str]]:
    """(message id, content) of up to `limit` of the session's searchable messages lacking a `model` vector."""
    return _messages(db, _OF_SESSION, {"session": session_id, "model": model, "limit": limit})


def missing_after(db: Database, after_id: int, model: str, limit: int) -> list[tuple[int, str]]:
    """(message id, content) of up to `limit` searchable messages past `after_id` lacking a `model` vector,
    every user's: the backfill walks the table in id order with this."""
    return _messages(db, _AFTER, {"after": after_id, "model": model, "limit": limit})


def _messages(db: Database, query: str, params: dict) -> list[tuple[int, str]]:
    with db.read() as s:
        return [(row[0], row[1]) for row in s.execute(text(query), params).all()]


def count_missing(db: Database, model: str) -> int:
    """How many searchable messages lack a `model` vector (the backfill's total)."""
    with db.read() as s:
        return int(s.execute(text(_COUNT), {"model": model}).scalar() or 0)


def add(db: Database, model: str, dimensions: int, vectors: Sequence[tuple[int, bytes]]) -> int:
    """Store (message id, float32 bytes) pairs in one transaction, replacing another model's row; a message
    deleted meanwhile is skipped (its id no longer exists). Returns how many were stored."""
    if not vectors:
        return 0
    ids = [message_id for message_id, _ in vectors]
    with db.write() as s:
        present = _existing(s, db.is_sqlite, ids)
        values = [{"message_id": i, "model": model, "dimensions": dimensions, "vector": v}
                  for i, v in vectors if i in present]
        if not values:
            return 0
        insert = (sqlite_insert if db.is_sqlite else pg_insert)(MessageEmbedding).values(values)
        s.execute(insert.on_conflict_do_update(index_elements=["message_id"], set_={
            "model": insert.excluded.model, "dimensions": insert.excluded.dimensions,
            "vector": insert.excluded.vector}))
    return len(values)


def _existing(s, sqlite: bool, ids: list[int]) -> set[int]:
    """The ids among `ids` that are still stored messages (a session may be forgotten while we embed)."""
    if sqlite:
        rows = s.execute(text("SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(:ids))"),
                         {"ids": json.dumps(ids)}).all()
    else:
        # FOR KEY SHARE: a session forgotten meanwhile waits for this commit instead of breaking the insert.
        rows = s.execute(text("SELECT id FROM messages WHERE id = ANY(:ids) FOR KEY SHARE"), {"ids": ids}).all()
    return {row[0] for row in rows}

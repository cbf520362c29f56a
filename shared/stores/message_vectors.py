"""The stored sentence embeddings of messages (`message_vectors`): which messages lack one, and adding them.

The search engine (shared/search/vectors.py) embeds; this store is where its vectors are committed.
"""

from __future__ import annotations

from typing import Sequence

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from shared.db import Database
from shared.models.search import MessageVector

_MISSING = """
SELECT m.id, m.content FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
LEFT JOIN message_vectors AS v ON v.message_id = m.id
WHERE v.message_id IS NULL AND s.user_id = :user AND m.role IN ('user', 'assistant')
  AND trim(coalesce(m.content, '')) <> ''
ORDER BY m.id
"""


def missing(db: Database, user_id: str) -> list[tuple[int, str]]:
    """(message id, content) of the user's searchable messages that have no vector yet, oldest first."""
    with db.read() as s:
        return [(row[0], row[1]) for row in s.execute(text(_MISSING), {"user": user_id}).all()]


def add(db: Database, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
    """Store (message id, vector bytes) pairs in one transaction; a message already embedded keeps its vector."""
    values = [{"message_id": message_id, "model": model, "vector": vector} for message_id, vector in vectors]
    with db.write() as s:
        insert = sqlite_insert if db.is_sqlite else pg_insert
        s.execute(insert(MessageVector).values(values).on_conflict_do_nothing(index_elements=["message_id"]))

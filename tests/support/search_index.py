"""The full-text index read directly (FTS5 on SQLite, the tsvector table on Postgres), not through search."""

from __future__ import annotations

from sqlalchemy import text


def indexed_ids(db, word: str) -> set[int]:
    """Ids of the messages whose index entry matches the word."""
    if db.is_sqlite:
        query = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH :w"
    else:
        query = "SELECT message_id FROM message_search WHERE document @@ plainto_tsquery('english', :w)"
    with db.engine.connect() as conn:
        return set(conn.execute(text(query), {"w": word}).scalars())

"""Message search: stored embeddings (hybrid search), the API's hit schema, and the index tables
kept outside the models.

The full-text index is FTS5 tables on SQLite and a tsvector table on Postgres (migration 0003
creates them, see its docstring); `include_name` keeps schema comparison and autogenerate from
dropping them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import LargeBinary
from sqlmodel import Field, SQLModel

SEARCH_TABLES = frozenset({"messages_fts", "messages_cjk", "message_search"})
_FTS5_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")


def is_search_index(name: str | None) -> bool:
    """True for a table (or an FTS5 shadow table) of the search index."""
    if not name:
        return False
    if name in SEARCH_TABLES:
        return True
    return any(name == table + suffix for table in SEARCH_TABLES for suffix in _FTS5_SHADOW_SUFFIXES)


def include_name(name: str | None, type_: str, parent_names: dict) -> bool:
    """Alembic `include_name` hook: compare everything except the search index's tables."""
    if type_ == "table":
        return not is_search_index(name)
    return True


class MessageVector(SQLModel, table=True):
    """A message's sentence embedding (float32, unit length), written by hybrid search when first needed."""

    __tablename__ = "message_vectors"

    message_id: int = Field(foreign_key="messages.id", primary_key=True, ondelete="CASCADE")
    model: str = Field(max_length=64)
    vector: bytes = Field(sa_type=LargeBinary)


class MessageEmbedding(SQLModel, table=True):
    """A message's embedding from the provider's /v1/embeddings (EMBEDDINGS_MODEL): unit-length float32 bytes.

    Kept apart from `message_vectors` (the local model's) so switching sources never mixes vector spaces;
    `model` and `dimensions` say which space a row is in, and a row of another model counts as missing.
    Plain bytes, not pgvector or sqlite-vec: see migration 0027_embeddings for why."""

    __tablename__ = "message_embeddings"

    message_id: int = Field(foreign_key="messages.id", primary_key=True, ondelete="CASCADE")
    model: str = Field(max_length=200)
    dimensions: int
    vector: bytes = Field(sa_type=LargeBinary)


class SearchHitPublic(SQLModel):
    """One matching message of the caller, as `GET /v1/search` returns it."""

    message_id: int
    session_id: str
    role: str
    content: str
    created_at: datetime
    score: float = Field(description="BM25-style relevance, higher is better; comparable within one answer only.")
    coverage: float = Field(description="Share (0-1) of the query's search terms the message itself holds.")


class SearchResults(SQLModel):
    query: str
    data: list[SearchHitPublic]

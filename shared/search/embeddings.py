"""Hybrid search's provider source: message embeddings from the configured `/v1/embeddings` (EMBEDDINGS_MODEL).

No torch in any service: the provider embeds. Messages are embedded off the turn's path (the reviewer's
`embed_messages` task after each turn, `hstack search backfill-embeddings` for older history) and stored in
`message_embeddings`; a search embeds only its query (one short call, one attempt) and compares it with the
stored vectors of the user's scope, brute force in numpy, as the local model's source does
(shared/search/vectors.py, kept as the option without a provider). A message not embedded yet simply has no
similarity; a provider that is down makes the search answer by keywords alone, with a warning.
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy
from sqlalchemy import text

from shared.config import Settings
from shared.db import Database
from shared.errors import ModelError
from shared.llm.embeddings import Embedder
from shared.search.scope import Scope
from shared.search.vectors import scored
from shared.stores import message_embeddings

log = logging.getLogger(__name__)

SESSION_CHUNK = 500  # a session's messages embedded per round of the task (several provider batches)
# Vectors compared per search, newest first: brute force over one person's history is a few ms at LoCoMo's
# 600 messages, but a 900,000-message history would read 1.4 GB of 384-wide vectors per search. Past this
# many, older messages rank by keywords alone; an ANN index (pgvector HNSW) is the way past it, and
# pgvector is not installable here (migration 0027_embeddings).
MAX_COMPARED = 20_000

_STORED = """
SELECT e.message_id, m.session_id, e.vector FROM message_embeddings AS e
JOIN messages AS m ON m.id = e.message_id JOIN sessions AS s ON s.id = m.session_id
WHERE e.model = :model AND e.dimensions = :dimensions AND {where}
ORDER BY e.message_id DESC LIMIT :cap
"""

Progress = Callable[[int], None]


def configured(settings: Settings) -> bool:
    """Whether the provider is hybrid search's source (EMBEDDINGS_MODEL set)."""
    return bool((settings.embeddings_model or "").strip())


def similarities(db: Database, settings: Settings, scope: Scope, query: str) -> dict[int, float] | None:
    """Cosine similarity of the query to each embedded message in scope, plus shares of the two before it in
    its session; None when the provider cannot embed the query now (the search goes on by keywords)."""
    try:
        embedder = Embedder.from_settings(settings)
        query_vector = numpy.asarray(embedder.embed([query], attempts=1, query=True)[0], dtype="float32")
    except ModelError as exc:
        log.warning("embeddings provider failed for a search, answering by keywords only: %s", exc.message)
        return None
    where, params = scope.where()
    with db.read() as s:
        rows = s.execute(text(_STORED.format(where=where)),
                         {**params, "model": embedder.model, "dimensions": len(query_vector),
                          "cap": MAX_COMPARED}).all()
    if not rows:
        return {}
    return scored(rows, query_vector)


def embed_session(db: Database, settings: Settings, session_id: str) -> int:
    """Embed and store the session's searchable messages that lack a vector of the model; returns how many.
    The after-turn task calls it: a turn's new messages, and any an earlier failed round left behind."""
    embedder = Embedder.from_settings(settings)
    if embedder is None:
        return 0
    done = 0
    while batch := message_embeddings.missing_in_session(db, session_id, embedder.model, SESSION_CHUNK):
        stored = _embed_and_store(db, embedder, batch, settings.embeddings_batch_size)
        done += stored
        if stored == 0 or len(batch) < SESSION_CHUNK:
            break
    return done


def backfill(db: Database, settings: Settings, progress: Progress | None = None) -> int:
    """Embed every stored message that lacks a vector of the model, oldest first, all users; `progress` is
    told each batch's count. Resumable: stopping half-way loses nothing, the next run goes on."""
    embedder = Embedder.from_settings(settings)
    if embedder is None:
        return 0
    size = settings.embeddings_batch_size
    after, done = 0, 0
    while batch := message_embeddings.missing_after(db, after, embedder.model, size):
        stored = _embed_and_store(db, embedder, batch, size)
        done += stored
        after = batch[-1][0]
        if progress is not None:
            progress(len(batch))
    return done


def _embed_and_store(db: Database, embedder: Embedder, batch: list[tuple[int, str]], size: int) -> int:
    """Ask the provider in batches of `size` and store each batch as it comes back."""
    stored = 0
    for start in range(0, len(batch), size):
        chunk = batch[start:start + size]
        vectors = numpy.asarray(embedder.embed([content for _, content in chunk]), dtype="float32")
        rows = [(message_id, vector.tobytes()) for (message_id, _), vector in zip(chunk, vectors)]
        stored += message_embeddings.add(db, embedder.model, vectors.shape[1], rows)
    return stored
